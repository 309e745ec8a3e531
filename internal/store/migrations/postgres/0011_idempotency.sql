-- Idempotency keys of API POSTs (internal/api/idempotency.go), per account,
-- so that a client retrying a POST with the same Idempotency-Key gets the
-- first answer again, from any process and after restarts, and the change
-- it asked for is made once.
--
-- A row is claimed 'running' before the request runs; applied turns 1 in
-- the same transaction as the change the request makes (store.InTx), so a
-- change can never be committed without its key, nor twice under one key;
-- the answer (2xx or 4xx) is recorded after it, turning the row 'done'.
-- lock_id names the request holding a running row until locked_until, after
-- which a row that was never applied may be claimed again. Rows older than
-- 24 hours answer nothing and are removed by the retention job (or replaced
-- by the next claim of their key).
CREATE TABLE idempotency_keys (
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    key          TEXT NOT NULL,
    method       TEXT NOT NULL,
    path         TEXT NOT NULL,
    request_hash TEXT NOT NULL, -- hex SHA-256 of the request body
    state        TEXT NOT NULL CHECK (state IN ('running', 'done')),
    applied      INTEGER NOT NULL DEFAULT 0,
    lock_id      TEXT,
    locked_until BIGINT,
    status       INTEGER,
    content_type TEXT,
    location     TEXT,
    body         BYTEA,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (account_id, key)
);

CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
