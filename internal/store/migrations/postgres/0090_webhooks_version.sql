-- An account's webhooks, as a firing reads them, carry a version (decision
-- 0109). A change and its event (store.ChangeAndFire) keep the subscribed
-- webhooks they read in the process, with the version read beside them,
-- and their one statement checks that version instead of reading the
-- webhooks again: a round trip of three per license created. Every change
-- to a column a firing reads (or a webhook added or deleted) moves the
-- version, here, by trigger, so that no path that writes webhooks can
-- forget it; the statement that finds another version fails whole, having
-- written nothing, and its change is made again after a fresh read.
ALTER TABLE accounts ADD COLUMN webhooks_version BIGINT NOT NULL DEFAULT 0;

CREATE FUNCTION herald_webhooks_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE accounts SET webhooks_version = webhooks_version + 1
  WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.account_id ELSE NEW.account_id END;
  RETURN NULL;
END $$;

CREATE TRIGGER webhooks_version_rows AFTER INSERT OR DELETE ON webhooks
  FOR EACH ROW EXECUTE FUNCTION herald_webhooks_changed();

-- The columns store.fireTargets reads. A health change moves the version
-- (a suspended webhook's logs are cancelled); a failure streak, a
-- reminder or a name does not.
CREATE TRIGGER webhooks_version_columns AFTER UPDATE ON webhooks
  FOR EACH ROW WHEN ((OLD.account_id, OLD.events, OLD.enabled, OLD.status, OLD.filter, OLD.url, OLD.token_sealed,
                      OLD.next_token_sealed, OLD.rotation_ends_at, OLD.headers_sealed, OLD.signature_scheme, OLD.rate_limit)
                     IS DISTINCT FROM
                     (NEW.account_id, NEW.events, NEW.enabled, NEW.status, NEW.filter, NEW.url, NEW.token_sealed,
                      NEW.next_token_sealed, NEW.rotation_ends_at, NEW.headers_sealed, NEW.signature_scheme, NEW.rate_limit))
  EXECUTE FUNCTION herald_webhooks_changed();

-- The check in the statement: `webhooks_version = seen OR
-- herald_webhooks_stale()`, whose second half runs only when the first is
-- false, and then raises an error (SQLSTATE HW001) that ends the statement
-- before it commits anything. A call is a plpgsql call; the comparison
-- that spares it is a read of the account's row by its key.
CREATE FUNCTION herald_webhooks_stale() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the account''s webhooks changed since they were read' USING ERRCODE = 'HW001';
END $$;
