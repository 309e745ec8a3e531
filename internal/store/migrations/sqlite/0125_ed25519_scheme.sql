-- Webhooks signed with ed25519 (decision 0125): Standard Webhooks' v1a
-- signatures, the private key kept as the webhook's sealed token.
-- SQLite cannot alter a CHECK; widening one changes no stored row, which
-- its documentation allows through the schema text itself.
PRAGMA writable_schema = ON;
UPDATE sqlite_master SET sql = replace(sql, 'CHECK (signature_scheme IN (''herald'', ''standard-webhooks''))',
  'CHECK (signature_scheme IN (''herald'', ''standard-webhooks'', ''standard-webhooks-ed25519''))')
WHERE type = 'table' AND name = 'webhooks';
PRAGMA writable_schema = RESET;
