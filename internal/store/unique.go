package store

import "errors"

// IsUniqueViolation reports whether err is a unique constraint refusing a
// duplicate, on either engine. Callers check for duplicates before writing,
// to answer with a precise message; this catches the race in which two
// transactions on PostgreSQL both pass that check.
func IsUniqueViolation(err error) bool {
	// PostgreSQL (pgconn.PgError): SQLSTATE 23505 unique_violation.
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		return pg.SQLState() == "23505"
	}
	// SQLite (modernc.org/sqlite Error): extended codes
	// SQLITE_CONSTRAINT_UNIQUE (2067) and SQLITE_CONSTRAINT_PRIMARYKEY (1555).
	var lite interface{ Code() int }
	if errors.As(err, &lite) {
		c := lite.Code()
		return c == 2067 || c == 1555
	}
	return false
}
