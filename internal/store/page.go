package store

import (
	"slices"
	"strings"
)

// Page is a keyset page of a list ordered newest first (ids descending, and
// ids are UUIDv7, so newest first by creation): Limit rows with ids below
// Cursor (the first page when Cursor is ""). Lists read both ways (the
// portal's) may instead ask for the Limit rows just above After, the page
// before one, or with Oldest for the last Limit rows; both still come back
// newest first.
type Page struct {
	Limit  int
	Cursor string
	After  string
	Oldest bool
}

// Window is one page of a list read both ways.
type Window[T any] struct {
	Items []T
	Newer string // After for the page before (newer), "" on the first
	Older string // Cursor for the page after (older), "" on the last
}

// apply adds the keyset condition, order and limit (one extra row tells
// whether a further page exists) to a query of rows with an id column.
func (p Page) apply(q string, args []any) (string, []any) { return p.applyTo("id", q, args) }

// applyTo is apply for a query whose id column is col.
func (p Page) applyTo(col, q string, args []any) (string, []any) {
	switch {
	case p.After != "":
		// Ascending from After: the rows nearest it, reversed by window.
		return q + ` AND ` + col + ` > ? ORDER BY ` + col + ` LIMIT ?`, append(args, p.After, p.Limit+1)
	case p.Oldest:
		return q + ` ORDER BY ` + col + ` LIMIT ?`, append(args, p.Limit+1)
	case p.Cursor != "":
		q += ` AND ` + col + ` < ?`
		args = append(args, p.Cursor)
	}
	return q + ` ORDER BY ` + col + ` DESC LIMIT ?`, append(args, p.Limit+1)
}

// cut trims the extra row Page.apply asked for and returns the next cursor;
// for pages read forward only (Cursor).
func cut[T any](list []T, limit int, id func(T) string) ([]T, string) {
	if len(list) <= limit {
		return list, ""
	}
	list = list[:limit]
	return list, id(list[limit-1])
}

// window trims the extra row Page.applyTo asked for, puts the rows newest
// first, and sets the cursors either side. A page read from a cursor has
// rows beyond that cursor (the ones it was taken from), so the way back is
// offered without another query; it may land on an empty page when those
// rows were deleted meanwhile, which the portal shows as such.
func window[T any](list []T, p Page, id func(T) string) Window[T] {
	more := len(list) > p.Limit
	if more {
		list = list[:p.Limit]
	}
	w := Window[T]{Items: list}
	if p.After != "" || p.Oldest {
		slices.Reverse(list)
		if len(list) > 0 {
			if more {
				w.Newer = id(list[0])
			}
			if p.After != "" {
				w.Older = id(list[len(list)-1])
			}
		}
		return w
	}
	if len(list) > 0 {
		if more {
			w.Older = id(list[len(list)-1])
		}
		if p.Cursor != "" {
			w.Newer = id(list[0])
		}
	}
	return w
}

// escapeLike makes s match itself in a LIKE pattern with ESCAPE '\': % and
// _ are wildcards otherwise, so a search for "50%_off" would match more.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// Apply adds a Page's keyset condition, order and limit to a query of rows
// with an id column, for packages that write their own SQL through the store
// (licensing). It asks for one row more than the limit; Cut trims it.
func (p Page) Apply(q string, args []any) (string, []any) { return p.apply(q, args) }

// Cut trims the extra row Apply asked for and returns the next page's
// cursor, "" on the last page.
func Cut[T any](list []T, limit int, id func(T) string) ([]T, string) { return cut(list, limit, id) }

// Placeholders returns "?, ?, …" for n values, for IN lists.
func Placeholders(n int) string { return placeholders(n) }
