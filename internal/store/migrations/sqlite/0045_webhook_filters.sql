-- A webhook's filter: the JSON object (internal/filter) an event's payload
-- must pass for the webhook to get a log of it; NULL for none, which passes
-- every event of the kinds it subscribes to. Fire reads the filters of an
-- account's webhooks through the partial index, so accounts without any pay
-- one index probe.
ALTER TABLE webhooks ADD COLUMN filter TEXT;
CREATE INDEX webhooks_filtered ON webhooks (account_id) WHERE filter IS NOT NULL;
