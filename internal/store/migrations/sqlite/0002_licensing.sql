-- Licensing resources: the sources of events. Times are Unix milliseconds.
--
-- Every table carries account_id, and every query is scoped by it. A child
-- references its parent by (account_id, id), so it can never point into
-- another account, and goes with its parent (ON DELETE CASCADE). Cascades
-- fire no events: only the explicit delete of the parent fires one.
--
--   product ─┬─ license ── activation
--            ├─ release ── release file
--            └─ trial activation
--   user ····· license (siblings: deleting a user clears licenses.user_id)

CREATE TABLE products (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    metadata   TEXT NOT NULL DEFAULT '{}', -- a JSON object, as given
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (account_id, id)
);

CREATE TABLE users (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email      TEXT NOT NULL,
    email_key  TEXT NOT NULL, -- the email lowercased in Go, so both engines compare alike
    name       TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (account_id, id),
    UNIQUE (account_id, email_key)
);

CREATE TABLE licenses (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    product_id          TEXT NOT NULL,
    -- Herald clears it explicitly when the user is deleted; SET NULL is the
    -- safety net that keeps it from ever naming a missing user.
    user_id             TEXT REFERENCES users (id) ON DELETE SET NULL,
    key                 TEXT NOT NULL,
    expires_at          BIGINT,
    validity            BIGINT, -- seconds a renewal adds
    allowed_activations BIGINT,
    total_activations   BIGINT NOT NULL DEFAULT 0,
    first_activated_at  BIGINT, -- set once, by the first activation ever
    metadata            TEXT NOT NULL DEFAULT '{}',
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL,
    UNIQUE (account_id, id),
    UNIQUE (account_id, key),
    FOREIGN KEY (account_id, product_id) REFERENCES products (account_id, id) ON DELETE CASCADE
);
CREATE INDEX licenses_product ON licenses (account_id, product_id, id);
CREATE INDEX licenses_user ON licenses (user_id);

CREATE TABLE activations (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL,
    license_id  TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    hostname    TEXT,
    os          TEXT,
    created_at  BIGINT NOT NULL,
    UNIQUE (account_id, id),
    UNIQUE (license_id, fingerprint),
    FOREIGN KEY (account_id, license_id) REFERENCES licenses (account_id, id) ON DELETE CASCADE
);
CREATE INDEX activations_license ON activations (account_id, license_id, id);

CREATE TABLE releases (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    product_id TEXT NOT NULL,
    version    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (account_id, id),
    UNIQUE (product_id, version),
    FOREIGN KEY (account_id, product_id) REFERENCES products (account_id, id) ON DELETE CASCADE
);
CREATE INDEX releases_product ON releases (account_id, product_id, id);

CREATE TABLE release_files (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    release_id TEXT NOT NULL,
    filename   TEXT NOT NULL,
    size       BIGINT NOT NULL,
    sha256     TEXT,
    created_at BIGINT NOT NULL,
    UNIQUE (release_id, filename),
    FOREIGN KEY (account_id, release_id) REFERENCES releases (account_id, id) ON DELETE CASCADE
);
CREATE INDEX release_files_release ON release_files (account_id, release_id, id);

CREATE TABLE trial_activations (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL,
    product_id  TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    expires_at  BIGINT,
    created_at  BIGINT NOT NULL,
    UNIQUE (account_id, id),
    UNIQUE (product_id, fingerprint),
    FOREIGN KEY (account_id, product_id) REFERENCES products (account_id, id) ON DELETE CASCADE
);
CREATE INDEX trial_activations_product ON trial_activations (account_id, product_id, id);
