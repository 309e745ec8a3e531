-- Portal flashes: what a form's answer has to say on the page it redirects
-- to (a confirmation, a Test result, the values and errors of a refused
-- form, a secret shown once), kept on the server and shown once, so that a
-- refresh, a bookmark or Back never shows it again and never repeats the
-- action. A flash belongs to a browser: holder is the SHA-256 of a secret
-- only that browser holds (its session id, or before sign-in the sign-in
-- form's cookie), and body is sealed with a key derived from that secret,
-- so the database alone can read none of it. Flashes older than an hour are
-- removed whenever one is added.
CREATE TABLE portal_flashes (
    id         TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    path       TEXT NOT NULL,  -- the page that shows it
    body       BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX portal_flashes_holder ON portal_flashes (holder, path);
CREATE INDEX portal_flashes_created_at ON portal_flashes (created_at);
