-- A claim reads each account's oldest due logs through this index
-- (postgresEngine.claim), so one account's deep backlog cannot hide another
-- account's due logs. SQLite's claim goes webhook by webhook through
-- webhook_event_logs_webhook_due and needs none.
CREATE INDEX webhook_event_logs_account_due ON webhook_event_logs (account_id, due_at)
    WHERE status IN ('queued', 'retrying', 'pending');
