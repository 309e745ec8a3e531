-- The headers of each attempt: those herald sent (the signature included: a
-- MAC of the body, not a secret; the token is never among them) and those the
-- receiver answered with, as one JSON document, bounded by the store
-- (MaxAttemptHeaders, MaxAttemptHeaderBytes). NULL for attempts recorded
-- before this column existed, and for attempts that sent nothing.
ALTER TABLE webhook_attempts ADD COLUMN headers TEXT;
