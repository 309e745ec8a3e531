-- How a webhook's deliveries are signed: 'herald' (the specification's
-- webhook-signature over the body, the default) or 'standard-webhooks'
-- (webhook-id, webhook-timestamp and v1 signatures over id.timestamp.body).
ALTER TABLE webhooks ADD COLUMN signature_scheme TEXT NOT NULL DEFAULT 'herald'
  CHECK (signature_scheme IN ('herald', 'standard-webhooks'));
