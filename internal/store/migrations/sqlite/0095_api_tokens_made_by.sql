-- Who made each API token: the person signed in to the portal, or, for a
-- token made through the API, the person who made the token that made it.
-- Removing a person revokes the tokens they made (decision 0118). Tokens
-- made before this migration name no one and stay until revoked.
ALTER TABLE api_tokens ADD COLUMN created_by TEXT REFERENCES owners (id) ON DELETE SET NULL;
