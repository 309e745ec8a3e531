-- Each running dispatcher's latest beat (decision 0117): a write it makes
-- every third of a lease, committed or not, that tells the process whether
-- its own writes reach the database. A process takes over the leases other
-- processes let end only while its beats land, so a database that stalls
-- for everyone never lets a lease end under a live process and its logs
-- be sent twice. A row is its process's alone: no two writers meet on it.
CREATE TABLE delivery_processes (
  id TEXT PRIMARY KEY,
  beat_at BIGINT NOT NULL
);
