-- An account's emails are listed (GET /v3/emails, the portal's Settings)
-- newest first, a page at a time.
CREATE INDEX emails_account ON emails (account_id, id);
