package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// postgresEngine runs herald on PostgreSQL through pgx v5, for several herald
// processes sharing one database: claims skip rows other processes hold
// locked, a NOTIFY after commit announces new due logs, and a listener on its
// own connection wakes this process's dispatcher when another process's
// NOTIFY arrives.
type postgresEngine struct {
	db *sql.DB
	// deliveryDB is the dispatcher's pool (lane.go), or nil.
	deliveryDB *sql.DB
	// leaseDB is the lease keeper's connection (lane.go), or nil.
	leaseDB *sql.DB
	// changeDB is the shared statements' pool (changebatch.go), or nil.
	changeDB  *sql.DB
	listener  *listener
	announcer *announcer
	// expiries announces planned expiry instants (expiryChannel).
	expiries *announcer
	// cachesPlans is set when the main pool's statements are prepared and
	// their plans cached (pgx's default mode, which the URL did not change).
	cachesPlans bool
}

// notifyChannel is the LISTEN/NOTIFY channel on which due logs are announced.
// Its payload is the announcing transaction's schema, so herald deployments in
// different schemas of one database do not wake each other.
const notifyChannel = "herald_due"

// expiryChannel is the channel on which a commit that planned expiry events
// (a license's expiresAt set or moved, an account's lead time changed) is
// announced, so that the expiry runners of other processes, asleep until
// a later instant, plan again. The payload is the schema, as above.
const expiryChannel = "herald_expiry"

// defaultPoolSize is how many connections one herald process opens at most
// unless the URL says otherwise with pool_max_conns (pgxpool's name for it):
// one the lease keeper's, 8 the dispatcher's, 16 everyone else's (lane.go).
const defaultPoolSize = 25

func openPostgres(ctx context.Context, s *Store, dbURL string) error {
	dbURL, poolSize, err := poolMaxConns(dbURL)
	if err != nil {
		return fmt.Errorf("open postgres: %w", err)
	}
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return fmt.Errorf("open postgres: %w", err)
	}
	if _, set := cfg.RuntimeParams["jit"]; !set {
		// JIT compilation pays for itself in long analytic queries, and
		// herald runs none: but a count over the partitioned history is
		// estimated costly enough to be compiled, which took 90 ms of a
		// count of 10,000 failed logs that runs in 10 ms without it (ten
		// million logs). Off on every connection, unless the URL says.
		if cfg.RuntimeParams == nil {
			cfg.RuntimeParams = map[string]string{}
		}
		cfg.RuntimeParams["jit"] = "off"
	}
	// Named, so that an operator reading pg_stat_activity, and a stall
	// report, tell herald's connections from others'; unless the URL names
	// them.
	cfg.RuntimeParams = withParam(cfg.RuntimeParams, "application_name", "herald")
	if cfg.ConnectTimeout == 0 {
		// Without it a connect to an unreachable address waits as long as
		// the operating system lets it; /readyz and reconnects need an answer.
		cfg.ConnectTimeout = 10 * time.Second
	}
	// Every pool's statements that time out are cancelled on the server
	// and reported (pgstall.go).
	// Not the listener's, whose wait for a notification ends by its
	// deadline every listenIdleCheck, by design.
	listenCfg := cfg.Copy()
	stalls := newStallReporter(*cfg, s.log)
	*cfg = stalls.watch(*cfg)
	leaseSize := leasePoolSize(poolSize)
	deliverySize := deliveryPoolSize(poolSize - leaseSize)
	changeSize := changePoolSize(poolSize - leaseSize - deliverySize)
	db := openPool(*cfg, poolSize-leaseSize-deliverySize-changeSize)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return fmt.Errorf("open postgres: %w", err)
	}
	own := &senders{}
	e := &postgresEngine{db: db, announcer: startAnnouncer(db, notifyChannel, own, s.log), expiries: startAnnouncer(db, expiryChannel, own, s.log),
		cachesPlans: cfg.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement}
	if deliverySize > 0 {
		e.deliveryDB = openPool(planEachTime(*cfg), deliverySize)
	}
	if changeSize > 0 {
		e.changeDB = openPool(lockTimeout(*cfg, changeLockTimeout), changeSize)
	}
	if leaseSize > 0 {
		e.leaseDB = openPool(lockTimeout(*cfg, leaseLockTimeout), leaseSize)
	}
	e.listener = startListener(listenCfg, map[string]func(){notifyChannel: s.wake, expiryChannel: s.wakeExpiries}, own, s.log)
	s.eng = e
	s.db, s.writer, s.deliveryDB, s.changeDB, s.leaseDB, s.where = db, db, e.deliveryDB, e.changeDB, e.leaseDB, "postgres"
	return nil
}

// planEachTime has each of the dispatcher's statements planned when it
// runs (but those that ask for a kept plan, engine.cached: decision 0097),
// for its arguments and the tables as they are then, and prices a scan
// of a whole table out of every plan (enable_seqscan off): each of its
// statements has an index made for it, so such a scan can only come from a
// mistaken estimate.
//
// A prepared statement's cached plan was such a mistake twice over. Plans
// cached when herald started, with its tables empty, last until the
// tables' statistics change, which without autovacuum may be never: so
// planned, a claim took its update as a hash join over the whole queue and
// read every log for each row it took (0.5 s a claim at 13,000 logs), and
// the probe of the next due time read the whole queue at every sleep
// (TestIdleHeraldWithAStuckWebhookReadsFewRows). And a generic plan of a
// statement that reads the day-partitioned history by id (the claim, the
// recording) cannot prune its partitions as a plan for known ids does:
// claims of 29 ms and 5,400 buffers each, and fan-out on PostgreSQL
// collapsing to 1,000 deliveries a second (decision 0095). Planning each
// time costs the database CPU per claim and per recording: at 200 events a
// second, where each carries one or two deliveries, PostgreSQL's CPU per
// delivery about doubles; under load it is shared by the batch.
func planEachTime(cfg pgx.ConnConfig) pgx.ConnConfig {
	if cfg.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement {
		// Not when the URL chose a mode (a transaction pooler's exec, say):
		// those plan each time too.
		cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	params := make(map[string]string, len(cfg.RuntimeParams)+1)
	for k, v := range cfg.RuntimeParams {
		params[k] = v
	}
	params["enable_seqscan"] = "off"
	cfg.RuntimeParams = params
	return cfg
}

// lockTimeout has every statement of cfg's connections give up a wait for
// a lock after d (PostgreSQL's lock_timeout: SQLSTATE 55P03, nothing of the
// statement written).
func lockTimeout(cfg pgx.ConnConfig, d time.Duration) pgx.ConnConfig {
	params := make(map[string]string, len(cfg.RuntimeParams)+1)
	for k, v := range cfg.RuntimeParams {
		params[k] = v
	}
	params["lock_timeout"] = strconv.FormatInt(d.Milliseconds(), 10)
	cfg.RuntimeParams = params
	return cfg
}

// openPool opens a pool of at most n connections.
func openPool(cfg pgx.ConnConfig, n int) *sql.DB {
	db := stdlib.OpenDB(cfg)
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	// Connections are replaced now and then so that a failover behind a
	// stable address, or a pooler's rebalancing, reaches every connection.
	db.SetConnMaxLifetime(30 * time.Minute)
	return db
}

// poolMaxConns takes pool_max_conns out of a URL (PostgreSQL itself would
// refuse it as an unknown setting) and returns it, or the default.
func poolMaxConns(dbURL string) (string, int, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", 0, fmt.Errorf("database URL: %w", err)
	}
	q := u.Query()
	v := q.Get("pool_max_conns")
	if v == "" {
		return dbURL, defaultPoolSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return "", 0, fmt.Errorf("database URL: pool_max_conns must be a whole number above 0")
	}
	q.Del("pool_max_conns")
	u.RawQuery = q.Encode()
	return u.String(), n, nil
}

func (*postgresEngine) caseInsensitiveLike() string { return "ILIKE" }

// planned puts pgx's cache-describe mode before the arguments: the
// statement runs unnamed, planned for these arguments, as every statement
// of the dispatcher's pool is (planEachTime). Only these reads: planned so,
// every statement of the API cost a fifth of its throughput (1,237–1,319
// deliveries a second in scenario a against 992–1,007). Not where the URL
// chose a mode (a pooler's), which plans each time already.
func (e *postgresEngine) planned(args []any) []any {
	if !e.cachesPlans {
		return args
	}
	return append([]any{pgx.QueryExecModeCacheDescribe}, args...)
}

// cached puts pgx's cache-statement mode before the arguments: the
// statement is prepared once per connection and PostgreSQL keeps its
// generic plan, on the dispatcher's connections too (planEachTime). Only
// for statements whose one sensible plan takes no estimate from their
// arguments (decision 0097). Not where the URL chose a mode.
func (e *postgresEngine) cached(args []any) []any {
	if !e.cachesPlans {
		return args
	}
	return append([]any{pgx.QueryExecModeCacheStatement}, args...)
}

func (*postgresEngine) name() string           { return "postgres" }
func (*postgresEngine) rebind(q string) string { return rebindDollar(postgresJSON.Replace(q)) }

// postgresJSON spells the portable JSON row sources (see JSONRows) in
// PostgreSQL: one row per element, its column named value as in SQLite.
var postgresJSON = strings.NewReplacer(
	"json_rows(?)", "jsonb_array_elements(CAST(? AS jsonb))",
	"json_texts(?)", "jsonb_array_elements_text(CAST(? AS jsonb))")

// forUpdate takes FOR NO KEY UPDATE, not FOR UPDATE: herald never changes a
// locked row's key, and the weaker lock does not conflict with the KEY SHARE
// locks that inserting event logs takes on their webhook (a foreign key), so
// recording outcomes never waits for, or deadlocks with, events being fired.
func (*postgresEngine) forUpdate() string  { return " FOR NO KEY UPDATE" }
func (*postgresEngine) skipLocked() string { return " FOR UPDATE SKIP LOCKED" }

// keyShare keeps a row from being deleted (or its key changed) until the
// transaction ends, and nothing more: any number of transactions may hold it
// at once, so children inserted under one parent do not queue behind each other.
func (*postgresEngine) keyShare() string { return " FOR KEY SHARE" }

func (e *postgresEngine) close() error {
	e.listener.stop()
	e.announcer.stop()
	e.expiries.stop()
	if e.changeDB != nil {
		e.changeDB.Close()
	}
	if e.deliveryDB != nil {
		e.deliveryDB.Close()
	}
	if e.leaseDB != nil {
		e.leaseDB.Close()
	}
	return e.db.Close()
}

func (e *postgresEngine) announce()         { e.announcer.kick() }
func (e *postgresEngine) announceExpiries() { e.expiries.kick() }

// lockMigrations makes migrators of one schema take turns: several herald
// processes started at once on an empty database would otherwise race to
// create the same tables. The lock ends with the transaction.
func (*postgresEngine) lockMigrations(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(8675309, hashtext(current_schema()))`)
	return err
}
