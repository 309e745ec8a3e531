-- Portal: sign-in sessions of account owners, and an index for the charts of
-- a webhook's recent attempts.

CREATE TABLE portal_sessions (
    id_hash    TEXT PRIMARY KEY, -- hex SHA-256 of the session id in the cookie
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    owner_id   TEXT NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    csrf_token TEXT NOT NULL,    -- sent back in a hidden field of every form
    created_at BIGINT NOT NULL,
    seen_at    BIGINT NOT NULL,
    expires_at BIGINT NOT NULL   -- the earlier of the idle and the absolute limit
);
CREATE INDEX portal_sessions_expires ON portal_sessions (expires_at);
CREATE INDEX portal_sessions_owner ON portal_sessions (owner_id);

-- The charts read the last day's attempts; without this index that means
-- every attempt the webhook ever made.
CREATE INDEX webhook_attempts_sent ON webhook_attempts (sent_at);
