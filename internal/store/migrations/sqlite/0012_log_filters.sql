-- The portal's event log filters. A date range reads the account's logs
-- created in it, and an event id its few logs (one per webhook), through
-- these rather than by stepping over the account's whole history in id
-- order: with 50,000 logs that walk took up to 150 ms on SQLite for a range
-- or an event id near the oldest end, and under 1 ms through these.
CREATE INDEX webhook_event_logs_account_created ON webhook_event_logs (account_id, created_at);
CREATE INDEX webhook_event_logs_account_event ON webhook_event_logs (account_id, event_id);
