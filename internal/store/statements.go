package store

import (
	"context"
	"database/sql"
)

// What the packages that write their own statements through the store use:
// licensing for its tables, and the queue (internal/queue) for the event
// pipeline's. The store keeps the connections, the engine and the
// transactions; they keep their SQL, written with ? placeholders and the
// portable JSON list sources (json_texts, json_rows), which Rebind turns
// into the engine's own.

// Writer is the pool a write under ctx runs on outside a transaction: the
// dispatcher's or the lease keeper's own on PostgreSQL when ctx is marked
// for them (OnDelivery, OnLease), else the one writer (SQLite) or the main
// pool.
func (s *Store) Writer(ctx context.Context) *sql.DB { return s.writerFor(ctx) }

// QueryWriter runs a query that writes outside a transaction on the pool
// Writer names, through a statement prepared once where the engine gains
// from it (SQLite's writer).
func (s *Store) QueryWriter(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	q, w := s.q(query), s.writerFor(ctx)
	if s.prepares() && w == s.writer {
		if st := s.writeStmts.get(ctx, s.writer, q); st != nil {
			return st.QueryContext(ctx, args...)
		}
	}
	return w.QueryContext(ctx, q, args...)
}

// Rebind turns a statement written with ? placeholders into the engine's
// own, once per distinct text.
func (s *Store) Rebind(query string) string { return s.q(query) }

// CachesPlans reports whether the main pool's statements keep their plans
// (PostgreSQL with pgx's statement cache).
func (s *Store) CachesPlans() bool {
	e, ok := s.eng.(*postgresEngine)
	return ok && e.cachesPlans
}

// Cached returns a statement's arguments so that the engine keeps its plan
// on the dispatcher's connections, which plan each statement by default
// (decision 0097).
func (s *Store) Cached(args []any) []any { return s.eng.cached(args) }

// SkipLocked is the engine's suffix that locks the selected rows and passes
// over those another transaction holds ("" on SQLite, whose writers take
// turns).
func (s *Store) SkipLocked() string { return s.eng.skipLocked() }

// Full returns err as ErrStorageFull when the engine refused a write for a
// full disk, saying so in the log at most once per FullLogEvery; other
// errors unchanged.
func (s *Store) Full(err error) error { return s.full(err) }

// Wrote notes that a write outside InTx changed rows, which shows, after a
// full disk, that there is space again.
func (s *Store) Wrote() { s.wrote() }

// Due tells this process's dispatcher and, on PostgreSQL, the others' that
// logs became due, after a write outside InTx committed them (a transaction
// that called Tx.MarkDue does it at its commit).
func (s *Store) Due() {
	s.wake()
	s.eng.announce()
}

// Emailed tells Options.OnEmail that a committed transaction queued an
// email, so the outbox looks at once.
func (s *Store) Emailed() {
	if s.onEmail != nil {
		s.onEmail()
	}
}

// MarkDue makes the transaction wake this process's dispatcher and the
// others' at its commit: it made logs due.
func (tx *Tx) MarkDue() { tx.fired = true }
