-- A log's id is made from its created_at's millisecond (decision 0100), so
-- a filter by creation time is a range of the account's ids and the index on
-- (account_id, created_at) goes: it cost every log an index entry. The logs
-- already written had ids made by the wall clock at or just after their
-- created_at: log_ids_exact keeps an instant after the newest of them (the
-- later of the server's clock and the newest id's time, each read without a
-- scan; 0 when there were none), below which a range keeps its slack.
CREATE TABLE log_ids_exact (since BIGINT NOT NULL);
INSERT INTO log_ids_exact (since)
SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM webhook_event_logs) THEN 0 ELSE 1 + GREATEST(
  (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
  COALESCE((SELECT ('x' || translate(substr(id, 1, 13), '-', ''))::bit(48)::bigint FROM webhook_event_logs
            WHERE id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-7' ORDER BY id DESC LIMIT 1), 0)) END;
DROP INDEX webhook_event_logs_account_created;
