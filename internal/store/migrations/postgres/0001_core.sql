-- Core: accounts and their credentials, webhooks, events, event logs and
-- their attempts, and the outbox of notification emails. Times are Unix
-- milliseconds (BIGINT) on both engines, so one SQL text serves both.

CREATE TABLE settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE accounts (
    id                 TEXT PRIMARY KEY,
    name               TEXT NOT NULL,
    notification_email TEXT NOT NULL,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL
);

CREATE TABLE owners (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email         TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);

CREATE TABLE api_tokens (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE TABLE webhooks (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    url            TEXT NOT NULL,
    events         TEXT NOT NULL, -- JSON array of event kinds
    enabled        BOOLEAN NOT NULL,
    status         TEXT NOT NULL,  -- Healthy | Unhealthy | Suspended
    token_sealed   BYTEA NOT NULL,  -- AES-GCM under the server key
    failure_streak INTEGER NOT NULL DEFAULT 0, -- completed events failed in a row
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE INDEX webhooks_account ON webhooks (account_id, id);

CREATE TABLE events (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL,
    kind         TEXT NOT NULL,
    body         BYTEA NOT NULL, -- the exact delivery body, signed and sent as is
    triggered_at BIGINT NOT NULL
);

CREATE TABLE webhook_event_logs (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL,
    webhook_id    TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id      TEXT NOT NULL REFERENCES events (id),
    kind          TEXT NOT NULL,
    status        TEXT NOT NULL,
    attempt_count INTEGER NOT NULL DEFAULT 0, -- automatic attempts made
    -- queued/retrying: when the next attempt is due; pending: when the lease
    -- expires and another claim may take it; NULL once complete.
    due_at        BIGINT,
    lease         TEXT,
    status_code   INTEGER,
    sent_at       BIGINT,
    received_at   BIGINT,
    retry_reason  TEXT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    completed_at  BIGINT
);
CREATE INDEX webhook_event_logs_due ON webhook_event_logs (due_at, webhook_id)
    WHERE status IN ('queued', 'retrying', 'pending');
CREATE INDEX webhook_event_logs_account ON webhook_event_logs (account_id, id);
CREATE INDEX webhook_event_logs_webhook ON webhook_event_logs (webhook_id, id);
CREATE INDEX webhook_event_logs_event ON webhook_event_logs (event_id);

CREATE TABLE webhook_attempts (
    log_id        TEXT NOT NULL REFERENCES webhook_event_logs (id) ON DELETE CASCADE,
    number        INTEGER NOT NULL,
    trigger       TEXT NOT NULL, -- automatic | resend
    sent_at       BIGINT NOT NULL,
    received_at   BIGINT,
    status_code   INTEGER,
    duration_ms   INTEGER NOT NULL,
    error         TEXT,
    response_body TEXT NOT NULL,
    PRIMARY KEY (log_id, number)
);

CREATE TABLE emails (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    recipient  TEXT NOT NULL,
    subject    TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    sent_at    BIGINT,
    error      TEXT
);
CREATE INDEX emails_unsent ON emails (created_at) WHERE sent_at IS NULL;
