-- Reads of a long history (decision 0096).
--
-- Failed logs, found among the undelivered ones: a failed log always has
-- undelivered_at set, and a delivered one never, so these partial indexes
-- take no entry from a delivery that succeeds, nor any column that the
-- outcome's update changes in place (HOT), and let a list of an account's
-- or a webhook's failed logs read those alone instead of every log.
CREATE INDEX webhook_event_logs_account_undelivered ON webhook_event_logs (account_id, id)
    WHERE undelivered_at IS NOT NULL;
CREATE INDEX webhook_event_logs_webhook_undelivered ON webhook_event_logs (webhook_id, id)
    WHERE undelivered_at IS NOT NULL;

-- An attempt carries its webhook, so that a webhook's charts read its own
-- attempts of the last day or week by time, not every webhook's attempts
-- (each joined to its log) of that time. The index on the time alone
-- served only the charts, and goes. Attempts of the charts' last eight
-- days are given their webhook; older ones are read by no chart and keep
-- NULL.
ALTER TABLE webhook_attempts ADD COLUMN webhook_id TEXT;
UPDATE webhook_attempts a SET webhook_id = l.webhook_id
FROM webhook_event_logs l
WHERE l.id = a.log_id AND a.sent_at >= CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT) - 8 * 86400000;
CREATE INDEX webhook_attempts_webhook_sent ON webhook_attempts (webhook_id, sent_at);
DROP INDEX webhook_attempts_sent;
