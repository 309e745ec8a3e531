-- Several herald processes on one database, and retention.
--
-- An email in the outbox is leased by the process sending it, so that of
-- several processes only one sends it; a lease that ends unsent (its process
-- died) lets another take it.
ALTER TABLE emails ADD COLUMN lease_until BIGINT;

-- Retention removes completed logs oldest first, and events left without logs.
CREATE INDEX webhook_event_logs_completed ON webhook_event_logs (completed_at)
    WHERE completed_at IS NOT NULL;
CREATE INDEX events_triggered ON events (triggered_at, id);
