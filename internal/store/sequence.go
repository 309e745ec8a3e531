package store

import (
	"context"
	"fmt"
	"sort"
)

// sequenceSQL counts each license's events: one row per license, with the
// number of events fired for it (n), gives each license's last number.
// A license with no row has fired license.created alone (1). Rows are
// taken in the licenses' order, so two firings over the same licenses on
// PostgreSQL wait for each other instead of deadlocking.
const sequenceSQL = `INSERT INTO license_sequences (license_id, account_id, last)
SELECT value ->> 'l', value ->> 'a', 1 + CAST(value ->> 'n' AS BIGINT) FROM json_rows(?) WHERE true ORDER BY value ->> 'l'
ON CONFLICT (license_id) DO UPDATE SET last = license_sequences.last + excluded.last - 1
RETURNING license_id, last`

// sequences gives each firing that concerns a license its number among
// that license's events, in the firings' order; 0 for one that concerns
// none. A license's first event (Firing.First) is 1 and costs nothing;
// the others cost one statement, however many.
func (tx *Tx) sequences(ctx context.Context, firings []Firing) ([]int64, error) {
	out := make([]int64, len(firings))
	type count struct {
		License string `json:"l"`
		Account string `json:"a"`
		N       int64  `json:"n"`
	}
	var counts []count
	at := map[string]int{}
	for i, f := range firings {
		switch {
		case f.License == "":
		case f.First:
			out[i] = 1
		default:
			j, ok := at[f.License]
			if !ok {
				j = len(counts)
				at[f.License] = j
				counts = append(counts, count{License: f.License, Account: f.AccountID})
			}
			counts[j].N++
		}
	}
	if len(counts) == 0 {
		return out, nil
	}
	if tx.change != nil {
		// A change made in one statement (ChangeAndFire) creates what it
		// fires about; a later event of a license is fired in a transaction.
		return nil, fmt.Errorf("number license events: a change made in one statement fires only a license's first event")
	}
	sort.Slice(counts, func(i, j int) bool { return counts[i].License < counts[j].License })
	arg, err := JSONRows(counts)
	if err != nil {
		return nil, fmt.Errorf("number license events: %w", err)
	}
	rows, err := tx.Query(ctx, sequenceSQL, arg)
	if err != nil {
		return nil, fmt.Errorf("number license events: %w", err)
	}
	defer rows.Close()
	last := map[string]int64{}
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("number license events: %w", err)
		}
		last[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("number license events: %w", err)
	}
	// The firings of one license take its numbers in their order, up to
	// its last.
	next := map[string]int64{}
	for _, c := range counts {
		l, ok := last[c.License]
		if !ok {
			return nil, fmt.Errorf("number license events: no number for license %s", c.License)
		}
		next[c.License] = l - c.N + 1
	}
	for i, f := range firings {
		if f.License != "" && !f.First {
			out[i] = next[f.License]
			next[f.License]++
		}
	}
	return out, nil
}
