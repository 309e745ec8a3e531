-- Products and users made as test data (herald trigger's) go without an
-- event when deleted: they were never real, and their cleanup must not
-- look like a change to subscribers. Their children go silently, as
-- every cascade does.
ALTER TABLE products ADD COLUMN test_data BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE users ADD COLUMN test_data BOOLEAN NOT NULL DEFAULT FALSE;
