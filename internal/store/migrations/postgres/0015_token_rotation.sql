-- Webhook token rotation with overlap. While next_token_sealed is set the
-- webhook's token (token_sealed) still signs webhook-signature and the next
-- token signs webhook-signature-next; from rotation_ends_at the next token
-- is the token. Both are sealed under the server key, bound to the webhook's
-- id, so the switch copies the sealed value as it is and the old token is
-- erased in the same UPDATE.
ALTER TABLE webhooks ADD COLUMN next_token_sealed BYTEA;
ALTER TABLE webhooks ADD COLUMN rotation_started_at BIGINT;
ALTER TABLE webhooks ADD COLUMN rotation_ends_at BIGINT;
-- The sweep that ends rotations whose overlap has passed reads only these.
CREATE INDEX webhooks_rotation_ends ON webhooks (rotation_ends_at) WHERE rotation_ends_at IS NOT NULL;
