-- A manual resend marks its log in flight until this time (Unix ms): a second
-- resend answers 409 and no claim takes the log meanwhile, so one log is never
-- sent twice at once, by one process or several. A process that dies mid-resend
-- leaves a mark that simply ends.
ALTER TABLE webhook_event_logs ADD COLUMN resend_until BIGINT;
