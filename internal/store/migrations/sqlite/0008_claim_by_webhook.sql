-- A claim takes each webhook's oldest due logs through this index, so its
-- work is bounded by the webhooks and their room, not by the backlog
-- (sqliteEngine.claim).
CREATE INDEX webhook_event_logs_webhook_due ON webhook_event_logs (webhook_id, due_at)
    WHERE status IN ('queued', 'retrying', 'pending');
