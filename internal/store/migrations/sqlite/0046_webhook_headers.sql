-- A webhook's custom headers, sent on every attempt, Test and resend: a
-- JSON object of names and values, sealed under the server key like the
-- token (bound to the webhook's id and to this column, so it cannot be
-- moved to another webhook or read as a token), since values are often
-- credentials (X-Api-Key). NULL for none.
ALTER TABLE webhooks ADD COLUMN headers_sealed BLOB;
