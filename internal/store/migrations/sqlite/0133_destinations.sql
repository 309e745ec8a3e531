-- A webhook of another type than http publishes to a broker (decision
-- 0133): its type, and its config sealed whole under the server key as
-- its token is (the config holds the broker's credentials). Its url holds
-- the address its type writes, never a credential.
ALTER TABLE webhooks ADD COLUMN type TEXT NOT NULL DEFAULT 'http';
ALTER TABLE webhooks ADD COLUMN config_sealed BLOB;
