-- The pull channel (decision 0140). A pull webhook's logs are queued as
-- every webhook's are; the dispatcher passes over them, and a consumer
-- reads them instead.
--
-- A pull token is a credential for one webhook, kept as the SHA-256 of
-- its secret, as an API token is; it goes with its webhook.
CREATE TABLE webhook_pull_tokens (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL,
    webhook_id  TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    token_hash  TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL
);
CREATE INDEX webhook_pull_tokens_webhook ON webhook_pull_tokens (webhook_id);

-- The last position a read gave one of the webhook's logs; its row is
-- locked by each read and acknowledgement, so that two readers never give
-- two logs one position.
CREATE TABLE webhook_pull_positions (
    webhook_id TEXT PRIMARY KEY REFERENCES webhooks (id) ON DELETE CASCADE,
    last       INTEGER NOT NULL
);

-- A queue row read for the first time gets the next position (the cursor
-- a consumer acknowledges) and the time of that read, the attempt's start.
-- The positions are given at read time, in the order the logs are queued,
-- so that a log whose transaction committed late still comes after every
-- position already given, never behind a cursor already acknowledged.
ALTER TABLE delivery_queue ADD COLUMN pull_position INTEGER;
ALTER TABLE delivery_queue ADD COLUMN pulled_at INTEGER;
CREATE INDEX delivery_queue_pull ON delivery_queue (webhook_id, pull_position) WHERE pull_position IS NOT NULL;
