package bench

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// A connection that reported its statistics less than a second before its
// last write holds that write's back until it has been idle ten seconds;
// the meter's first sample waits for every row the setup wrote, so the
// held-back product.created is counted before the scenario, not in it.
// (A sample taken once the webhooks showed and nothing moved for a second
// and a half counted it in the scenario: a CI run's events were one more
// than its API calls.)
func TestPGMeterWaitsForHeldBackSetupStatistics(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for PostgreSQL's ten-second idle report")
	}
	ctx := context.Background()
	dbURL := heraldtest.PostgresURL(t)
	exec := func(c *pgx.Conn, sql string) {
		t.Helper()
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") { // herald's, not the server's
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	conn := func() *pgx.Conn {
		c, err := pgx.Connect(ctx, u.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	setup := conn()
	for _, table := range []string{"accounts", "products", "events", "webhooks"} {
		exec(setup, `CREATE TABLE `+table+` (id int)`)
	}
	time.Sleep(1100 * time.Millisecond) // setup's next report goes at once
	// The product and its event on a new connection, the event within a
	// second of the connection's first report: held back.
	product := conn()
	exec(product, `INSERT INTO products VALUES (1)`)
	exec(product, `INSERT INTO events VALUES (1)`)
	// The account and the webhook in one transaction: reported at once.
	exec(setup, `INSERT INTO accounts VALUES (1); INSERT INTO webhooks VALUES (1)`)

	m, err := newPGMeter(ctx, dbURL, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if m.unsettled != nil {
		t.Fatal(m.unsettled)
	}
	if got := m.before.tables["events"].Inserts; got != 1 {
		t.Errorf("events inserted before the scenario: %d; want the product's 1", got)
	}
}

// The meter counts the transactions that wrote apart from every commit: a
// read outside a transaction block commits and writes nothing. Transaction
// ids are the server's, which other tests share, so only the writes made
// here are a bound.
func TestPGMeterCountsWriteTransactions(t *testing.T) {
	ctx := context.Background()
	dbURL := heraldtest.PostgresURL(t)
	u := mustParse(t, dbURL)
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") { // herald's, not the server's
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	c, err := pgx.Connect(ctx, u.String()) // in the test's schema, as herald's would be
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range []string{`CREATE TABLE accounts (id int)`, `CREATE TABLE products (id int)`, `CREATE TABLE events (id int)`,
		`CREATE TABLE webhooks (id int)`, `INSERT INTO accounts VALUES (1); INSERT INTO products VALUES (1); INSERT INTO events VALUES (1); INSERT INTO webhooks VALUES (1)`} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	m, err := newPGMeter(ctx, dbURL, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	for i := range 3 {
		if _, err := c.Exec(ctx, `INSERT INTO events VALUES ($1)`, i); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := c.Exec(ctx, `SELECT count(*) FROM events`); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Close(ctx) // an ended connection reports its statistics as it exits
	cost, err := m.cost(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if cost.WritesPerDelivery < 3 || cost.CommitsPerDelivery < 9 {
		t.Errorf("writes %.0f, commits %.0f; want at least the 3 inserts, and at least them and the 6 reads", cost.WritesPerDelivery, cost.CommitsPerDelivery)
	}
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
