-- Accounts and their people. An account's users (the table keeps its first
-- name, owners) each have a role: an owner manages the account's people, a
-- member uses the portal. Every existing user owned their account alone, so
-- they stay owners.
ALTER TABLE owners ADD COLUMN role TEXT NOT NULL DEFAULT 'owner' CHECK (role IN ('owner', 'member'));
CREATE INDEX owners_account ON owners (account_id, id);

-- Single-use sign-in links: an operator's portal link (signs in as the
-- account's first owner) and an owner's invitation (the invited person sets
-- a password and becomes a user). Only the SHA-256 of the link's token is
-- kept; using a link deletes its row, in the transaction that uses it.
CREATE TABLE signin_links (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    kind       TEXT NOT NULL CHECK (kind IN ('portal', 'invitation')),
    email      TEXT,  -- invitation: the address invited
    role       TEXT CHECK (role IN ('owner', 'member')),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX signin_links_account ON signin_links (account_id, kind, id);
CREATE INDEX signin_links_expires ON signin_links (expires_at);
