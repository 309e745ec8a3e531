-- A kept answer's body is sealed with the server key, as a webhook's
-- token is: the answer of a webhook's creation holds its signing token,
-- and for 24 hours the table held it in plain text for anyone with the
-- database file or a backup (decision 0118). The rows kept before are
-- sealed by the migration's step in Go (store/idempotency.go).
ALTER TABLE idempotency_keys ADD COLUMN sealed INTEGER NOT NULL DEFAULT 0;
