-- Limits an operator sets per account. NULL is the server-wide default: no
-- cap on an account's webhooks, and no rate for the account beyond each API
-- token's own (--rate-limit). A cap is counted when a webhook is created,
-- in the creating transaction; lowering it below what an account has keeps
-- its webhooks and refuses new ones.
ALTER TABLE accounts ADD COLUMN max_webhooks BIGINT CHECK (max_webhooks > 0);
ALTER TABLE accounts ADD COLUMN api_requests_per_second BIGINT CHECK (api_requests_per_second > 0);
