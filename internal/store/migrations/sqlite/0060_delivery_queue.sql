-- The queue apart from the history, as on PostgreSQL (decision 0086): one
-- narrow row per queued or retrying log, claimed, leased and completed there,
-- so the log is written once at firing and once per outcome. SQLite keeps its
-- other log indexes (it rewrites only the indexes whose columns change, and
-- its retention walks the completion index).
CREATE TABLE delivery_queue (
    log_id       TEXT PRIMARY KEY,
    webhook_id   TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    due_at       INTEGER NOT NULL,
    lease        TEXT,
    attempts     INTEGER NOT NULL DEFAULT 0,
    claimed_at   INTEGER,           -- when the lease was taken: the log is in flight since
    resend_until INTEGER
);
CREATE INDEX delivery_queue_webhook_due ON delivery_queue (webhook_id, due_at);

INSERT INTO delivery_queue (log_id, webhook_id, due_at, lease, attempts, claimed_at, resend_until)
SELECT id, webhook_id, COALESCE(due_at, 0), lease, attempt_count, CASE WHEN status = 'pending' THEN updated_at END, resend_until
FROM webhook_event_logs WHERE status IN ('queued', 'retrying', 'pending');
UPDATE webhook_event_logs SET status = CASE WHEN attempt_count = 0 THEN 'queued' ELSE 'retrying' END, lease = NULL
WHERE status = 'pending';

ALTER TABLE webhook_event_logs ADD COLUMN undelivered_at INTEGER;
UPDATE webhook_event_logs SET undelivered_at = completed_at
WHERE status = 'failed' OR (status = 'cancelled' AND retry_reason LIKE 'webhook suspended%');
CREATE INDEX webhook_event_logs_undelivered_at ON webhook_event_logs (webhook_id, undelivered_at)
    WHERE undelivered_at IS NOT NULL;
DROP INDEX webhook_event_logs_undelivered;
DROP INDEX webhook_event_logs_due;
DROP INDEX webhook_event_logs_webhook_due;
