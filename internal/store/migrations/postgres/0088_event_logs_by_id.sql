-- A log's id is made from its event's (store.LogIDOf, decision 0104): an
-- event's logs are one narrow range of the logs' key, and the index on
-- (event_id) goes: it cost every log an entry. The logs already written have
-- ids of their own; event_log_ids keeps an instant after the newest of them
-- (as log_ids_exact does, migration 0087; 0 when there were none), below
-- which an event's logs are looked up by event_id. Each partition that holds
-- logs now gets an index of its own on event_id for that lookup: it goes
-- with its day, and the days made after hold none.
CREATE TABLE event_log_ids (since BIGINT NOT NULL);
INSERT INTO event_log_ids (since)
SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM webhook_event_logs) THEN 0 ELSE 1 + GREATEST(
  (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
  COALESCE((SELECT ('x' || translate(substr(id, 1, 13), '-', ''))::bit(48)::bigint FROM webhook_event_logs
            WHERE id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-7' ORDER BY id DESC LIMIT 1), 0)) END;
DO $$
DECLARE
  part regclass;
  held boolean;
BEGIN
  FOR part IN SELECT relid FROM pg_partition_tree('webhook_event_logs') WHERE isleaf LOOP
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', part) INTO held;
    IF held THEN
      EXECUTE format('CREATE INDEX %I ON %s (event_id)', (SELECT relname FROM pg_class WHERE oid = part) || '_event', part);
    END IF;
  END LOOP;
END $$;
DROP INDEX webhook_event_logs_event;
