-- The expiry schedule apart from the license (decision 0098).
--
-- The plan of a license's expiry events (migration 0040) moves from its row
-- into a narrow table of its own, so that firing an expiry event rewrites
-- this short row and its two indexes, not the license and every index of
-- licenses (expiry_due_at was indexed there: no update of it could be HOT).
-- A row is made when a license is given an expiresAt and goes with the
-- license (ON DELETE CASCADE: a license deleted, or its product or account,
-- fires nothing more). expires_at is the license's, as last planned (each
-- change of it plans again, in its transaction); account_id gives the lead
-- time; soon_fired_for, expired_fired_for and due_at are what 0040 put on
-- the license. A row stays when nothing more is due, so that the same
-- instant set again fires nothing twice.
CREATE TABLE license_expiries (
    license_id        TEXT PRIMARY KEY REFERENCES licenses (id) ON DELETE CASCADE,
    account_id        TEXT NOT NULL,
    expires_at        BIGINT,
    soon_fired_for    BIGINT,
    expired_fired_for BIGINT,
    due_at            BIGINT
);
CREATE INDEX license_expiries_due ON license_expiries (due_at) WHERE due_at IS NOT NULL;
INSERT INTO license_expiries (license_id, account_id, expires_at, soon_fired_for, expired_fired_for, due_at)
SELECT id, account_id, expires_at, soon_fired_for, expired_fired_for, expiry_due_at FROM licenses
WHERE expires_at IS NOT NULL OR soon_fired_for IS NOT NULL OR expired_fired_for IS NOT NULL;
DROP INDEX licenses_expiry_due;
ALTER TABLE licenses DROP COLUMN expiry_due_at;
ALTER TABLE licenses DROP COLUMN soon_fired_for;
ALTER TABLE licenses DROP COLUMN expired_fired_for;
