-- Licensing resources: the sources of events.

CREATE TABLE products (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    metadata   TEXT NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX products_account ON products (account_id, id);

CREATE TABLE licenses (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    product_id          TEXT NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    user_id             TEXT,
    key                 TEXT NOT NULL,
    expires_at          BIGINT,
    validity            BIGINT,
    allowed_activations INTEGER,
    total_activations   INTEGER NOT NULL DEFAULT 0,
    first_activated_at  BIGINT,
    metadata            TEXT NOT NULL DEFAULT '{}',
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL,
    UNIQUE (account_id, key)
);
CREATE INDEX licenses_account ON licenses (account_id, id);
CREATE INDEX licenses_product ON licenses (product_id);
