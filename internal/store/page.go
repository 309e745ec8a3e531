package store

// Apply adds a Page's keyset condition, order and limit to a query of rows
// with an id column, for packages that write their own SQL through the store
// (licensing). It asks for one row more than the limit; Cut trims it.
func (p Page) Apply(q string, args []any) (string, []any) { return p.apply(q, args) }

// Cut trims the extra row Apply asked for and returns the next page's
// cursor, "" on the last page.
func Cut[T any](list []T, limit int, id func(T) string) ([]T, string) { return cut(list, limit, id) }

// Placeholders returns "?, ?, …" for n values, for IN lists.
func Placeholders(n int) string { return placeholders(n) }
