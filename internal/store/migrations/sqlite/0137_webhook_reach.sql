-- How a webhook's requests reach its receiver beyond its URL (decisions
-- 0137 to 0139). payload: 'full' (the event's object in the body) or
-- 'thin' (its id and the API path to read it). tls_sealed: the client
-- certificate, its key and the CA that verifies the receiver, as one JSON
-- object sealed under the server key; tls_not_after its certificate's
-- expiry (ms), read by the expiry warning, and tls_warned_for the expiry
-- last warned of, so that one certificate is warned of once. oauth2_sealed:
-- the token URL, client id and secret and scopes, sealed likewise.
ALTER TABLE webhooks ADD COLUMN payload TEXT NOT NULL DEFAULT 'full';
ALTER TABLE webhooks ADD COLUMN tls_sealed BLOB;
ALTER TABLE webhooks ADD COLUMN tls_not_after INTEGER;
ALTER TABLE webhooks ADD COLUMN tls_warned_for INTEGER;
ALTER TABLE webhooks ADD COLUMN oauth2_sealed BLOB;
