-- Webhooks signed with ed25519 (decision 0125): Standard Webhooks' v1a
-- signatures, the private key kept as the webhook's sealed token.
ALTER TABLE webhooks DROP CONSTRAINT webhooks_signature_scheme_check;
ALTER TABLE webhooks ADD CONSTRAINT webhooks_signature_scheme_check
  CHECK (signature_scheme IN ('herald', 'standard-webhooks', 'standard-webhooks-ed25519'));
