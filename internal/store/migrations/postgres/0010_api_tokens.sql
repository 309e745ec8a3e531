-- API tokens: several per account, each with a name, a scope (write: every
-- call; read: GET only), an optional expiry and the time it was last used
-- (written at most once a minute per token, store/apitoken.go). The token
-- every account already has keeps its hash, so clients using it keep
-- working; it becomes a write token named "First token". A revoked token's
-- row is deleted. The defaults only fill the existing rows: herald names
-- both values on every insert.
ALTER TABLE api_tokens ADD COLUMN name TEXT NOT NULL DEFAULT 'First token';
ALTER TABLE api_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'write' CHECK (scope IN ('write', 'read'));
ALTER TABLE api_tokens ADD COLUMN expires_at BIGINT;
ALTER TABLE api_tokens ADD COLUMN last_used_at BIGINT;
ALTER TABLE api_tokens ALTER COLUMN name DROP DEFAULT, ALTER COLUMN scope DROP DEFAULT;
-- Lists are per account, newest first, by keyset on id.
CREATE INDEX api_tokens_account ON api_tokens (account_id, id);
