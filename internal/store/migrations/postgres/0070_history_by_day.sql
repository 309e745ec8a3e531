-- The history partitioned by day (decision 0090): events, webhook_event_logs
-- and webhook_attempts become tables partitioned by RANGE of their UUIDv7
-- text id (the attempts on their log's id), so that retention drops a day
-- whole. This SQL puts the old tables aside and makes the new ones; the
-- migration's Go step (store.partitionHistory) makes the partitions of
-- every day that has rows and of the week ahead, a DEFAULT partition each,
-- copies the rows, drops the old tables and analyses the new ones, all in
-- this transaction.
--
-- The foreign keys between history tables go (a partition referred to by
-- another table's key cannot simply be dropped): attempts -> logs and
-- recovery_logs -> logs cascaded, and the store now deletes those rows
-- itself where logs are deleted; logs -> events only checked. Those to
-- plain tables (logs -> webhooks, ON DELETE CASCADE) stay.
ALTER TABLE recovery_logs DROP CONSTRAINT recovery_logs_log_id_fkey;

ALTER TABLE webhook_attempts RENAME TO webhook_attempts_unpartitioned;
ALTER INDEX webhook_attempts_pkey RENAME TO webhook_attempts_unpartitioned_pkey;
ALTER INDEX webhook_attempts_sent RENAME TO webhook_attempts_unpartitioned_sent;

ALTER TABLE webhook_event_logs RENAME TO webhook_event_logs_unpartitioned;
ALTER INDEX webhook_event_logs_pkey RENAME TO webhook_event_logs_unpartitioned_pkey;
ALTER INDEX webhook_event_logs_account RENAME TO webhook_event_logs_unpartitioned_account;
ALTER INDEX webhook_event_logs_account_created RENAME TO webhook_event_logs_unpartitioned_account_created;
ALTER INDEX webhook_event_logs_event RENAME TO webhook_event_logs_unpartitioned_event;
ALTER INDEX webhook_event_logs_undelivered_at RENAME TO webhook_event_logs_unpartitioned_undelivered_at;
ALTER INDEX webhook_event_logs_webhook RENAME TO webhook_event_logs_unpartitioned_webhook;

ALTER TABLE events RENAME TO events_unpartitioned;
ALTER INDEX events_pkey RENAME TO events_unpartitioned_pkey;
ALTER INDEX events_triggered RENAME TO events_unpartitioned_triggered;

CREATE TABLE events (
    id text NOT NULL,
    account_id text NOT NULL,
    kind text NOT NULL,
    body bytea NOT NULL,
    triggered_at bigint NOT NULL,
    trace_parent text,
    CONSTRAINT events_pkey PRIMARY KEY (id)
) PARTITION BY RANGE (id);
CREATE INDEX events_triggered ON events (triggered_at, id);

CREATE TABLE webhook_event_logs (
    id text NOT NULL,
    account_id text NOT NULL,
    webhook_id text NOT NULL,
    event_id text NOT NULL,
    kind text NOT NULL,
    status text NOT NULL,
    attempt_count integer DEFAULT 0 NOT NULL,
    due_at bigint,
    lease text,
    status_code integer,
    sent_at bigint,
    received_at bigint,
    retry_reason text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    completed_at bigint,
    resend_until bigint,
    undelivered_at bigint,
    CONSTRAINT webhook_event_logs_pkey PRIMARY KEY (id),
    CONSTRAINT webhook_event_logs_webhook_id_fkey FOREIGN KEY (webhook_id) REFERENCES webhooks (id) ON DELETE CASCADE
) PARTITION BY RANGE (id);
CREATE INDEX webhook_event_logs_account ON webhook_event_logs (account_id, id);
CREATE INDEX webhook_event_logs_account_created ON webhook_event_logs (account_id, created_at);
CREATE INDEX webhook_event_logs_event ON webhook_event_logs (event_id);
CREATE INDEX webhook_event_logs_undelivered_at ON webhook_event_logs (webhook_id, undelivered_at) WHERE undelivered_at IS NOT NULL;
CREATE INDEX webhook_event_logs_webhook ON webhook_event_logs (webhook_id, id);

CREATE TABLE webhook_attempts (
    log_id text NOT NULL,
    number integer NOT NULL,
    trigger text NOT NULL,
    sent_at bigint NOT NULL,
    received_at bigint,
    status_code integer,
    duration_ms integer NOT NULL,
    error text,
    response_body text NOT NULL,
    headers text,
    CONSTRAINT webhook_attempts_pkey PRIMARY KEY (log_id, number)
) PARTITION BY RANGE (log_id);
CREATE INDEX webhook_attempts_sent ON webhook_attempts (sent_at);
