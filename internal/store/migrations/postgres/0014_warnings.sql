-- Warnings before and after a webhook is switched off, and the operational
-- events. suspended_at is when the webhook was last suspended (NULL unless
-- it is Suspended; a webhook suspended before this migration gets the time
-- the reminder job first sees it), reminded_at when the last reminder was
-- queued: the reminder job moves it with a conditional UPDATE, so of
-- several processes only one queues each reminder. last_failure is the
-- latest event the webhook failed to deliver (JSON: log, event, status code,
-- reason, time), named by the warnings and the operational events.
ALTER TABLE webhooks ADD COLUMN suspended_at BIGINT;
ALTER TABLE webhooks ADD COLUMN reminded_at BIGINT;
ALTER TABLE webhooks ADD COLUMN last_failure TEXT;
CREATE INDEX webhooks_suspended ON webhooks (suspended_at) WHERE status = 'Suspended';
-- What an email is about (unhealthy, suspended, reminder); NULL for the
-- suspension emails queued before this migration.
ALTER TABLE emails ADD COLUMN kind TEXT;
