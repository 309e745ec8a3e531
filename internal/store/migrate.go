package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations
var migrations embed.FS

// migrate applies, in order and each in its own transaction, the embedded
// migrations not yet recorded, up to version upTo (0: all). Several processes starting at once are
// serialised by the engine's lockMigrations, taken first in each transaction,
// so each migration runs once and none sees a half-made schema.
func (s *Store) migrate(ctx context.Context, upTo int) error {
	dir := "migrations/" + s.eng.name()
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		version, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: name must start with a number", e.Name())
		}
		if upTo > 0 && version > upTo {
			break
		}
		text, err := fs.ReadFile(migrations, dir+"/"+e.Name())
		if err != nil {
			return fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		if err := s.applyMigration(ctx, version, string(text)); err != nil {
			return fmt.Errorf("migration %s: %w", e.Name(), err)
		}
	}
	return nil
}

// migrationSteps are the parts of migrations written in Go, run in the
// migration's transaction after its SQL: what needs values that only Go
// computes (the day bounds of partitions, partition.go) or the server key
// (sealing, idempotency.go).
var migrationSteps = map[string]map[int]func(context.Context, *Store, *sql.Tx) error{
	"postgres": {70: func(ctx context.Context, _ *Store, tx *sql.Tx) error { return partitionHistory(ctx, tx) }, 94: sealKeptAnswers, 96: standardSecrets},
	"sqlite":   {94: sealKeptAnswers, 96: standardSecrets},
}

func (s *Store) applyMigration(ctx context.Context, version int, text string) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.eng.lockMigrations(ctx, tx); err != nil {
		return err
	}
	// Inside the lock: two processes creating it at once can collide even
	// with IF NOT EXISTS.
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`), version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, text); err != nil {
		return err
	}
	if step := migrationSteps[s.eng.name()][version]; step != nil {
		if err := step(ctx, s, tx); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`), version, ms(s.now())); err != nil {
		return err
	}
	return tx.Commit()
}

// SchemaVersion returns the newest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}
