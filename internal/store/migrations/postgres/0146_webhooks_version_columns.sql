-- A firing that hands its first attempts over reads two more columns of
-- its webhooks than migration 0090's trigger watched: retry_policy (the
-- handed-over claim's retry policy, decision 0123) and ordering (a webhook
-- whose events keep each license's order is never handed over, decision
-- 0131). A change to either left the version unmoved, and a process kept
-- using the set it had read: a handed-over attempt with the old retry
-- policy, or an ordered webhook's event handed over past an earlier one
-- still held. The trigger now watches every column a firing reads
-- (decision 0109; a test checks the list against store's).
DROP TRIGGER webhooks_version_columns ON webhooks;

CREATE TRIGGER webhooks_version_columns AFTER UPDATE ON webhooks
  FOR EACH ROW WHEN ((OLD.account_id, OLD.events, OLD.enabled, OLD.status, OLD.filter, OLD.url, OLD.token_sealed,
                      OLD.next_token_sealed, OLD.rotation_ends_at, OLD.headers_sealed, OLD.signature_scheme, OLD.rate_limit,
                      OLD.retry_policy, OLD.ordering)
                     IS DISTINCT FROM
                     (NEW.account_id, NEW.events, NEW.enabled, NEW.status, NEW.filter, NEW.url, NEW.token_sealed,
                      NEW.next_token_sealed, NEW.rotation_ends_at, NEW.headers_sealed, NEW.signature_scheme, NEW.rate_limit,
                      NEW.retry_policy, NEW.ordering))
  EXECUTE FUNCTION herald_webhooks_changed();
