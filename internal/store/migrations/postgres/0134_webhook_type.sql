-- A webhook's type: 'http' (it POSTs to its url) or 'pull' (its consumer
-- reads its events, decision 0140).
ALTER TABLE webhooks ADD COLUMN type TEXT NOT NULL DEFAULT 'http';
