-- Most licenses have no user: a license sold to a company, or made by a
-- shop's checkout, names none. The index of licenses by user held an entry
-- for each of them all the same (NULL), one of the index entries every
-- license created writes. Only licenses with a user are found by it (the
-- list filtered by userId, a user's deletion and its foreign key's check),
-- and `user_id = ?` implies `user_id IS NOT NULL`, so a partial index serves
-- every one of those reads and costs a license without a user nothing.
DROP INDEX licenses_user;
CREATE INDEX licenses_user ON licenses (user_id) WHERE user_id IS NOT NULL;
