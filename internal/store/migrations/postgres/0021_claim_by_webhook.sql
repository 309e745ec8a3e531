-- A claim takes each webhook's oldest due logs through this index
-- (postgresEngine.claim), as on SQLite (its migration 0008): a webhook with
-- no room is passed over without reading its logs, one with room for n reads
-- and locks at most n, and one webhook's deep backlog fills no more of a
-- claim than that webhook's room. The per-account index of 0020, which the
-- claim this replaces read (and which the planner passed over for the due
-- index), has no reader left.
CREATE INDEX webhook_event_logs_webhook_due ON webhook_event_logs (webhook_id, due_at)
    WHERE status IN ('queued', 'retrying', 'pending');
DROP INDEX webhook_event_logs_account_due;
