-- A lease apart from the due time (decision 0099).
--
-- A claim wrote the lease's end into due_at, the column of the queue's one
-- claim index (webhook_id, due_at): no claim and no renewal of a lease could
-- be HOT, and each added two index entries (the key and the claim index) to
-- every delivery, and as many dead entries for the claims to step over until
-- the queue's vacuum. The lease's end gets a column of its own, which no
-- index holds: due_at stays when the row became due, a claim sets lease,
-- lease_until and claimed_at, and a claim passes over a row whose lease
-- runs. lease_until is set exactly when lease is.
--
-- The claim's update is HOT only where the row's page has room for its new
-- version, which is half as long again as the row inserted (the lease, its
-- end and the claim's time filled in): at fillfactor 70 a burst of rows
-- claimed together found room for 26 of 60 new versions, at 40 for every
-- one (TestADeliveryWritesItsLogOnceAndHOT). The queue is its rows in
-- flight or waiting, so the room costs little; it applies to pages made
-- from now on.
ALTER TABLE delivery_queue ADD COLUMN lease_until BIGINT;
ALTER TABLE delivery_queue SET (fillfactor = 40);
-- Rows leased when this ran: their due_at was the lease's end.
UPDATE delivery_queue SET lease_until = due_at WHERE lease IS NOT NULL;
