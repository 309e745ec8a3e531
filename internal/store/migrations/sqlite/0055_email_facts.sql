-- A warning's email is queued with its facts (JSON: the webhook, its failure
-- streak, its latest failure, a reminder's period), not its words: package
-- notify writes the subject and body from the facts as it takes the email
-- from the outbox, and they are kept with the email once it has left.
-- Emails queued before this migration carry their words and no facts.
ALTER TABLE emails ADD COLUMN facts TEXT;
