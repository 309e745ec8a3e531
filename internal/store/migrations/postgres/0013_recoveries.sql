-- Bulk recovery (POST /v3/webhooks/{id}/recover): a recovery resends once
-- each of a webhook's failed and suspended-cancelled logs in a range of
-- time. The logs it covers are fixed when it starts (recovery_logs), so its
-- count is what the owner was shown and a log it has sent is never sent by
-- it again, after a restart included: a log is marked 'sending' in its own
-- transaction before its POST, and 'sent' in the transaction that records
-- the attempt. One process runs a recovery at a time, under a lease.
CREATE TABLE recoveries (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL,
    webhook_id  TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    status      TEXT NOT NULL CHECK (status IN ('running', 'done', 'cancelled')),
    since_at    BIGINT NOT NULL,
    until_at    BIGINT,
    statuses    TEXT NOT NULL, -- JSON array of the log statuses asked for
    total       INTEGER NOT NULL,
    sent        INTEGER NOT NULL DEFAULT 0,
    succeeded   INTEGER NOT NULL DEFAULT 0,
    failed      INTEGER NOT NULL DEFAULT 0,
    lease       TEXT,
    lease_until BIGINT,
    created_at  BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX recoveries_webhook ON recoveries (webhook_id, id);
CREATE INDEX recoveries_running ON recoveries (lease_until) WHERE status = 'running';

CREATE TABLE recovery_logs (
    recovery_id TEXT NOT NULL REFERENCES recoveries (id) ON DELETE CASCADE,
    log_id      TEXT NOT NULL REFERENCES webhook_event_logs (id) ON DELETE CASCADE,
    -- waiting | sending | sent | skipped (delivered or in flight meanwhile)
    -- | interrupted (its process died between marking it and recording it)
    state       TEXT NOT NULL,
    PRIMARY KEY (recovery_id, log_id)
);
CREATE INDEX recovery_logs_log ON recovery_logs (log_id);

-- undeliveredCount: a webhook's failed and suspended-cancelled logs
-- completed since it last left Healthy (NULL while Healthy). Webhooks not
-- Healthy when this ran count all of theirs.
ALTER TABLE webhooks ADD COLUMN left_healthy_at BIGINT;
UPDATE webhooks SET left_healthy_at = 0 WHERE status <> 'Healthy';
CREATE INDEX webhook_event_logs_undelivered ON webhook_event_logs (webhook_id, completed_at)
    WHERE status IN ('failed', 'cancelled');
