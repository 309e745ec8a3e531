-- Failed sends back off one email at a time, so that one undeliverable
-- address cannot hold up the outbox for everyone.
ALTER TABLE emails ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
