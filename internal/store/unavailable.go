package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err says the database could not do the work
// now but may a moment later, nothing of it written: the connection was
// refused, reset or closed, the server is shutting down or starting, the
// backend was terminated, a statement timed out or was cancelled, a lock
// or a serializable snapshot could not be had, connections ran out. The
// API and the portal answer such an error 503 with Retry-After (a client
// retries it), never 500 (a bug); the dispatcher keeps trying to record an
// outcome through it rather than give the outcome up. A full disk is
// ErrStorageFull, apart, with advice of its own.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, ErrStorageFull) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return true
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return transientState(pg.Code)
	}
	var connect *pgconn.ConnectError
	if errors.As(err, &connect) {
		return true
	}
	var lite interface{ Code() int }
	if errors.As(err, &lite) {
		// SQLITE_BUSY (5) and SQLITE_LOCKED (6): another connection holds
		// the lock past the busy timeout.
		code := lite.Code() & 0xff
		return code == 5 || code == 6
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	// pgx reports a connection lost mid-statement in words of its own
	// ("unexpected EOF" wrapped in text, "conn closed").
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "unexpected EOF") || strings.Contains(msg, "connection reset by peer")
}

// transientState reports whether a PostgreSQL SQLSTATE is one a retry may
// not meet: class 08 (the connection), 53 but a full disk (resources: too
// many connections, out of memory), 57P01-57P05 (the server shutting down,
// starting, or the backend terminated), 57014 (the statement cancelled, by
// herald's own time-out), 40001 and 40P01 (serialization failure,
// deadlock), 55P03 (a lock not had in time).
func transientState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"):
		return true
	case strings.HasPrefix(code, "53"):
		return code != "53100"
	case strings.HasPrefix(code, "57P"), code == "57014":
		return true
	case code == "40001", code == "40P01", code == "55P03":
		return true
	}
	return false
}
