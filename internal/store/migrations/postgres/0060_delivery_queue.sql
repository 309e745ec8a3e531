-- The queue apart from the history (decision 0086). webhook_event_logs was
-- both: each delivery inserted its log and rewrote it at the claim and at the
-- outcome, and neither update was HOT, since each changed a column of one of
-- the log's ten indexes or of a partial index's condition (5 to 7 KB of WAL
-- and about 24 index entries per delivery).
--
-- delivery_queue holds only the work that is due or in flight: one narrow
-- row per queued or retrying log, with the one index its claim reads
-- (webhook by webhook, oldest due first) beside its key. A row is inserted
-- when its event fires, leased by a claim (lease, due_at = the lease's end),
-- and deleted by the outcome that completes its log (or moved to the retry's
-- time). The log is written once at firing and once per outcome; a claim no
-- longer touches it, and it is never 'pending': an attempt in flight is a
-- queue row under a lease.
--
-- A row's webhook_id cascades from its webhook (and so from its account).
-- fillfactor leaves room in each page for the claim's and renewals' new row
-- versions; deleted rows are dead tuples reclaimed by page pruning and by
-- herald's own VACUUM of this table (store.VacuumQueue), not by autovacuum,
-- which some operators run without.
CREATE TABLE delivery_queue (
    log_id       TEXT PRIMARY KEY,
    webhook_id   TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    due_at       BIGINT NOT NULL, -- unleased: when due; leased: when the lease ends
    lease        TEXT,            -- the claim's lease while an attempt is in flight
    attempts     INTEGER NOT NULL DEFAULT 0, -- automatic attempts made: a retry once above 0
    claimed_at   BIGINT,           -- when the lease was taken: the log is in flight since
    resend_until BIGINT            -- a manual resend holds it until then (claims pass over it)
) WITH (fillfactor = 70);
CREATE INDEX delivery_queue_webhook_due ON delivery_queue (webhook_id, due_at);

-- Logs waiting or in flight when this ran keep their place and their lease:
-- a lease still running is taken over by a claim when it ends, as before.
INSERT INTO delivery_queue (log_id, webhook_id, due_at, lease, attempts, claimed_at, resend_until)
SELECT id, webhook_id, COALESCE(due_at, 0), lease, attempt_count, CASE WHEN status = 'pending' THEN updated_at END, resend_until
FROM webhook_event_logs WHERE status IN ('queued', 'retrying', 'pending');
UPDATE webhook_event_logs SET status = CASE WHEN attempt_count = 0 THEN 'queued' ELSE 'retrying' END, lease = NULL
WHERE status = 'pending';

-- undeliveredCount reads undelivered_at: a failed or suspended-cancelled
-- log's completion time, NULL for every other log. A delivery leaves it NULL,
-- so the index on it takes no entry and the outcome's update stays HOT,
-- where the partial index on status it replaces took one at every outcome.
ALTER TABLE webhook_event_logs ADD COLUMN undelivered_at BIGINT;
UPDATE webhook_event_logs SET undelivered_at = completed_at
WHERE status = 'failed' OR (status = 'cancelled' AND retry_reason LIKE 'webhook suspended%');
CREATE INDEX webhook_event_logs_undelivered_at ON webhook_event_logs (webhook_id, undelivered_at)
    WHERE undelivered_at IS NOT NULL;
DROP INDEX webhook_event_logs_undelivered;

-- Indexes of the queue's columns (due_at, status, completed_at), which the
-- outcome changes: their work moved to delivery_queue, to the per-account
-- creation index (retention, see PurgeLogs) and to the event index (an event
-- id is found through it and the account checked on its few logs).
DROP INDEX webhook_event_logs_due;
DROP INDEX webhook_event_logs_webhook_due;
DROP INDEX webhook_event_logs_completed;
DROP INDEX webhook_event_logs_account_event;

-- Room in each page of the logs for their outcome's new versions: a HOT
-- update must find it on the row's own page. Filled to the brim (the
-- default), a page written in a burst has none when its logs' outcomes
-- come, all in one batch's transaction (whose old versions cannot be pruned
-- before it commits), and measured so none of 600 outcome updates was HOT;
-- at 70, 40%; at 50, 90%; at 45, all. The table is no larger for it than
-- the non-HOT updates made it, each leaving its old version behind. Pages
-- written before this keep their fill.
ALTER TABLE webhook_event_logs SET (fillfactor = 45);

ANALYZE delivery_queue;
ANALYZE webhook_event_logs;
