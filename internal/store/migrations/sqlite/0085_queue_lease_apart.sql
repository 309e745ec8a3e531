-- A lease apart from the due time, as on PostgreSQL (decision 0099): a claim
-- sets lease, lease_until and claimed_at and leaves due_at, the claim
-- index's column, as it was; a claim passes over a row whose lease runs.
-- lease_until is set exactly when lease is.
ALTER TABLE delivery_queue ADD COLUMN lease_until INTEGER;
-- Rows leased when this ran: their due_at was the lease's end.
UPDATE delivery_queue SET lease_until = due_at WHERE lease IS NOT NULL;
