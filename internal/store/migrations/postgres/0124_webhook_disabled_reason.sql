-- Why herald disabled a webhook itself (decision 0124): its receiver
-- answered 410 Gone. NULL for a webhook enabled, or disabled by its owner;
-- enabling it again clears it.
ALTER TABLE webhooks ADD COLUMN disabled_reason TEXT;
