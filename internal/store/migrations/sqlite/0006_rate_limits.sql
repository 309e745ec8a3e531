-- Request counts shared by the processes on one database, per rate-limit key
-- and window (see internal/ratelimit). They matter for seconds only, so
-- PostgreSQL does not write them to its WAL: a crash forgets them, which
-- costs nothing but a moment of lenience.
CREATE TABLE rate_limit_counts (
  key TEXT NOT NULL,
  window_no BIGINT NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (key, window_no)
);

-- Failed portal sign-ins per key (an email with an address, an address, an
-- email) in the window that began at window_start (Unix ms); shared by every
-- process, so a guesser cannot spread attempts over them.
CREATE TABLE signin_failures (
  key TEXT PRIMARY KEY,
  window_start BIGINT NOT NULL,
  n INTEGER NOT NULL
);
