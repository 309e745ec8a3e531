-- A log's id is made from its created_at's millisecond (decision 0100), so
-- a filter by creation time is a range of the account's ids and the index on
-- (account_id, created_at) goes: it cost every log an index entry. The logs
-- already written had ids made by the wall clock just after their
-- created_at: log_ids_exact keeps the first millisecond after the newest of
-- them (0 when there were none), below which a range keeps its slack.
CREATE TABLE log_ids_exact (since BIGINT NOT NULL);
INSERT INTO log_ids_exact (since) SELECT COALESCE(MAX(created_at) + 1, 0) FROM webhook_event_logs;
DROP INDEX webhook_event_logs_account_created;
