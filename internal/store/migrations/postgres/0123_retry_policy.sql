-- A webhook's own retry policy (decision 0123): JSON {maxAttempts,
-- backoff, intervalSeconds, maxIntervalSeconds}; NULL follows the
-- operator's --max-attempts and --retry-interval (5 attempts 5 minutes
-- apart unless changed).
ALTER TABLE webhooks ADD COLUMN retry_policy TEXT;
