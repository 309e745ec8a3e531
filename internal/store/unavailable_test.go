package store_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/internal/store"
)

// Unavailable tells a database that may answer a moment later (the API
// answers 503 with Retry-After, the dispatcher keeps an outcome) from an
// error a retry will not mend (500, or given up).
func TestUnavailable(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("record outcomes: %w", &pgconn.PgError{Code: code}) }
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a statement's time-out", fmt.Errorf("claim: %w", context.DeadlineExceeded), true},
		{"connection refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"a connection closed mid-answer", io.ErrUnexpectedEOF, true},
		{"a bad connection", driver.ErrBadConn, true},
		{"the pool's connection closed", pgconn.ErrConnClosed, true},
		{"admin shutdown (a terminated backend)", pg("57P01"), true},
		{"crash shutdown", pg("57P02"), true},
		{"the server starting", pg("57P03"), true},
		{"a cancelled statement", pg("57014"), true},
		{"connection failure", pg("08006"), true},
		{"too many connections", pg("53300"), true},
		{"serialization failure", pg("40001"), true},
		{"deadlock", pg("40P01"), true},
		{"lock not available", pg("55P03"), true},
		{"disk full is apart", pg("53100"), false},
		{"a unique violation", pg("23505"), false},
		{"a syntax error", pg("42601"), false},
		{"a full disk, wrapped", fmt.Errorf("%w: %w", store.ErrStorageFull, pg("53100")), false},
		{"not found", store.ErrNotFound, false},
		{"any other error", errors.New("boom"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.Unavailable(tt.err); got != tt.want {
				t.Errorf("Unavailable(%v) = %v; want %v", tt.err, got, tt.want)
			}
		})
	}
}
