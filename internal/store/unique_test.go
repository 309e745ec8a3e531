package store

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

func TestIsUniqueViolation(t *testing.T) {
	t.Parallel()
	urls := map[string]string{"sqlite": "sqlite:" + filepath.Join(t.TempDir(), "h.db")}
	if base := os.Getenv("HERALD_TEST_POSTGRES_URL"); base != "" {
		urls["postgres"] = postgresSchema(t, base)
	}
	for name, u := range urls {
		t.Run(name, func(t *testing.T) {
			key := make([]byte, 32)
			rand.Read(key)
			s, err := Open(t.Context(), u, Options{Key: key})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			insert := func() error {
				return s.InTx(t.Context(), func(tx *Tx) error {
					_, err := tx.Exec(t.Context(), `INSERT INTO settings (name, value) VALUES ('dup', 'x')`)
					return err
				})
			}
			if err := insert(); err != nil {
				t.Fatal(err)
			}
			err = insert()
			if err == nil || !IsUniqueViolation(err) {
				t.Errorf("second insert: %v; want a unique violation", err)
			}
			err = s.InTx(t.Context(), func(tx *Tx) error {
				_, err := tx.Exec(t.Context(), `INSERT INTO settings (name, value) VALUES (?, NULL)`, "null")
				return err
			})
			if err == nil || IsUniqueViolation(err) {
				t.Errorf("NOT NULL violation: %v; want an error that is not a unique violation", err)
			}
		})
	}
}

func postgresSchema(t *testing.T, base string) string {
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b := make([]byte, 8)
	rand.Read(b)
	schema := "herald_test_" + hex.EncodeToString(b)
	if _, err := db.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`); db.Close() })
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("pool_max_conns", "2") // tests share the server's connections
	u.RawQuery = q.Encode()
	return u.String()
}
