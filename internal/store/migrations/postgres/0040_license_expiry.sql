-- Expiry events (license.expiring-soon, license.expired).
--
-- The account's lead time: how long before a license's expiresAt
-- license.expiring-soon fires. 7 days by default, 1 hour to 90 days.
ALTER TABLE accounts ADD COLUMN expiring_soon_lead_seconds BIGINT NOT NULL DEFAULT 604800
    CHECK (expiring_soon_lead_seconds BETWEEN 3600 AND 7776000);
-- soon_fired_for and expired_fired_for hold the expires_at for which each
-- event has fired, so a move of expires_at re-arms both and the same instant
-- never fires twice. expiry_due_at is when the next of them is due (NULL:
-- none), written with them in the firing transaction and again whenever
-- expires_at or the lead time changes; the partial index lets a wake-up read
-- only the rows that are due.
ALTER TABLE licenses ADD COLUMN expiry_due_at BIGINT;
ALTER TABLE licenses ADD COLUMN soon_fired_for BIGINT;
ALTER TABLE licenses ADD COLUMN expired_fired_for BIGINT;
CREATE INDEX licenses_expiry_due ON licenses (expiry_due_at) WHERE expiry_due_at IS NOT NULL;
-- Licenses that expired before herald knew these events count as told:
-- an upgrade must not send a flood about expiries long past. The others are
-- planned as from now on (one within the lead time hears license.expiring-soon
-- at the first start).
UPDATE licenses SET soon_fired_for = expires_at, expired_fired_for = expires_at
WHERE expires_at IS NOT NULL AND expires_at <= CAST(extract(epoch FROM now()) * 1000 AS BIGINT);
UPDATE licenses SET expiry_due_at = expires_at - 1000 * 604800
WHERE expires_at IS NOT NULL AND expired_fired_for IS NULL;
