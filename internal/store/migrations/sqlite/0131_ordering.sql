-- Delivery in each license's order (decision 0131). A webhook's ordering:
-- 'none' (each log on its own) or 'license' (a license's events, its
-- activations' included, in the order they fired); and what a log of an
-- ordered webhook that ends failed does to the later ones: 'hold' them
-- until it is resent or skipped, or let them 'continue'.
ALTER TABLE webhooks ADD COLUMN ordering TEXT NOT NULL DEFAULT 'none';
ALTER TABLE webhooks ADD COLUMN ordering_on_failure TEXT NOT NULL DEFAULT 'hold';

-- A queue row of an ordered webhook carries its event's license
-- (ordering_key) and number there (sequence), copied at firing; NULL for
-- any other row. A claim passes over a row while a row of the same webhook
-- and key with a lower sequence is in the queue (store/ordering.go).
ALTER TABLE delivery_queue ADD COLUMN ordering_key TEXT;
ALTER TABLE delivery_queue ADD COLUMN sequence INTEGER;
CREATE INDEX delivery_queue_ordering ON delivery_queue (webhook_id, ordering_key, sequence)
    WHERE ordering_key IS NOT NULL;
