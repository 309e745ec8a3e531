package heraldtest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/heraldhq/herald/internal/store"
)

// migratedSQLite is an empty SQLite database with every migration applied
// and no key recorded yet: what a herald's first open leaves before it
// records its key. Made once per test binary: migrating a new file costs
// about a third of a CPU-second under -race (SQLite re-reads its schema
// after every statement that changes it), and a package's tests start
// hundreds of heralds.
var migratedSQLite = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "heraldtest-template")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "herald.db")
	key := make([]byte, 32)
	rand.Read(key)
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:"+path, store.Options{Key: key, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("migrate a template database: %w", err)
	}
	// The key check is the one row the first open writes besides the
	// migrations; without it each copy takes its own herald's key.
	err = st.InTx(ctx, func(tx *store.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM settings WHERE name = 'key_check'`)
		return err
	})
	if cerr := st.Close(); err == nil { // Close checkpoints the WAL into the file
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("make a template database: %w", err)
	}
	return os.ReadFile(path)
})

// seedSQLite writes the migrated template where dbURL names a SQLite file
// that does not exist yet, so that the herald opening it finds its schema
// current rather than migrate it. Any other URL, or a file that is there
// (a herald restarted on its database), is left alone.
func seedSQLite(dbURL string) error {
	path, ok := strings.CutPrefix(dbURL, "sqlite:")
	if !ok {
		return nil
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	b, err := migratedSQLite()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
