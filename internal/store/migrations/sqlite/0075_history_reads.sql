-- Reads of a long history (decision 0096); the PostgreSQL migration of the
-- same number says why each.
CREATE INDEX webhook_event_logs_account_undelivered ON webhook_event_logs (account_id, id)
    WHERE undelivered_at IS NOT NULL;
CREATE INDEX webhook_event_logs_webhook_undelivered ON webhook_event_logs (webhook_id, id)
    WHERE undelivered_at IS NOT NULL;

ALTER TABLE webhook_attempts ADD COLUMN webhook_id TEXT;
UPDATE webhook_attempts SET webhook_id = (SELECT l.webhook_id FROM webhook_event_logs l WHERE l.id = webhook_attempts.log_id)
WHERE sent_at >= CAST(strftime('%s', 'now') AS INTEGER) * 1000 - 8 * 86400000;
CREATE INDEX webhook_attempts_webhook_sent ON webhook_attempts (webhook_id, sent_at);
DROP INDEX webhook_attempts_sent;
