-- A webhook's throttle: at most rate_limit deliveries per second to it (NULL
-- for none), shared by every herald process on the database.
ALTER TABLE webhooks ADD COLUMN rate_limit INTEGER CHECK (rate_limit BETWEEN 1 AND 10000);

-- The throttle's state, one row per webhook that has been throttled: the
-- generic cell rate algorithm's "theoretical arrival time", tat, the moment
-- (Unix microseconds) from which the webhook's next send slot is free, and
-- granted_from, where the latest reservation's slots began. A reservation
-- (Store.ReserveSends) moves both in one upsert, so processes sharing the
-- database take disjoint slots. Kept apart from webhooks so that its
-- frequent small updates neither rewrite nor lock the wide webhook row.
CREATE TABLE webhook_throttles (
    webhook_id   TEXT PRIMARY KEY REFERENCES webhooks (id) ON DELETE CASCADE,
    granted_from BIGINT NOT NULL,
    tat          BIGINT NOT NULL
);
