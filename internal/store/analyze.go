package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AnalyzeStale analyses, on PostgreSQL with autovacuum off, the tables of
// herald's schema that changed enough since their last analysis to need
// another by autovacuum's own rule (more rows inserted, updated or deleted
// than autovacuum_analyze_threshold plus autovacuum_analyze_scale_factor of
// the table's rows), and returns their names. The planner costs every
// statement by these statistics, and plans cached from a table's first,
// empty hours last until they change: without them a list of logs or a
// license's key check can scan a whole table for a row. Some operators run
// without autovacuum; herald must not depend on it for its plans. With
// autovacuum on (the server's setting or the table's), it does nothing:
// autovacuum analyses by the same rule. SQLite plans from what its indexes
// say and needs none of this.
func (s *Store) AnalyzeStale(ctx context.Context) ([]string, error) {
	if s.eng.name() != "postgres" {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `
SELECT t.relname FROM pg_stat_user_tables t JOIN pg_class c ON c.oid = t.relid
WHERE t.schemaname = current_schema()
  AND t.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
      + current_setting('autovacuum_analyze_scale_factor')::float8 * GREATEST(c.reltuples, 0)
  AND NOT (current_setting('autovacuum')::bool AND COALESCE(NOT ('autovacuum_enabled=false' = ANY(c.reloptions)), true))
ORDER BY t.n_mod_since_analyze DESC`)
	if err != nil {
		return nil, fmt.Errorf("find tables to analyse: %w", err)
	}
	var stale []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("find tables to analyse: %w", err)
		}
		stale = append(stale, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find tables to analyse: %w", err)
	}
	var done []string
	for _, name := range stale {
		// SKIP_LOCKED: a table another process is analysing is passed over.
		if _, err := s.db.ExecContext(ctx, `ANALYZE (SKIP_LOCKED) `+pgx.Identifier{name}.Sanitize()); err != nil {
			return done, fmt.Errorf("analyse %s: %w", name, err)
		}
		done = append(done, name)
	}
	return done, nil
}
