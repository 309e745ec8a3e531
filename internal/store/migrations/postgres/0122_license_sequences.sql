-- Each license's count of events (decision 0122): the sequence of its
-- latest event but its first. license.created is always 1 and writes no
-- row, so a license with no row has fired only that; the next event
-- writes 2. The row outlives its license, so license.deleted and anything
-- after it keep counting on. Taken with the event's firing, in its
-- transaction: the row's lock puts concurrent changes to one license in
-- order, each with its own number.
CREATE TABLE license_sequences (
  license_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
  last BIGINT NOT NULL
);

-- Which license an event concerns and its number there, for the events
-- fired from now on (NULL for one that concerns no license, and for the
-- events fired before): what delivery in each license's order reads.
ALTER TABLE events ADD COLUMN license_id TEXT;
ALTER TABLE events ADD COLUMN sequence BIGINT;
