// Package store owns herald's persistent state but for the event pipeline
// after firing: the connections and transactions (one SQL text for both
// engines), accounts, people and credentials, webhooks and their sealed
// secrets, the firing of events (an event, one log per subscribed webhook
// and its queue row, in the transaction of the change that fired it), the
// email outbox, settings, and the schema with all its migrations. What
// follows a firing (claims, leases, recorded outcomes, recoveries, the pull
// channel) is package queue's, whose statements run through the store's
// transactions (statements.go), as licensing writes its own tables'
// statements through a Tx (or Query for reads), in the same transaction as
// the events they fire, with the same ? placeholders and stored-time
// helpers (MS, FromMS), so one SQL text still serves both engines.
//
// One SQL text serves both engines: statements are written with ? placeholders
// and portable SQL, times are Unix milliseconds, and what truly differs
// (placeholders, row locks, migrations, wake-ups across processes) sits
// behind the small engine interface, implemented for SQLite in sqlite.go
// and PostgreSQL in postgres.go. Every query that reads or changes an
// account's rows is scoped by its account id.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/event"

	"github.com/heraldhq/herald/internal/secret"
)

// Errors callers map to answers.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// engine is what differs between SQLite and PostgreSQL.
type engine interface {
	name() string
	// rebind turns ? placeholders into the engine's own.
	rebind(q string) string
	// forUpdate is the suffix that locks selected rows until the transaction
	// ends ("" where the engine serialises writers anyway).
	forUpdate() string
	// skipLocked is the suffix that locks selected rows and passes over rows
	// another transaction holds, so concurrent workers take disjoint rows
	// ("" where the engine serialises writers anyway).
	skipLocked() string
	// keyShare is the suffix that keeps selected rows from being deleted
	// until the transaction ends, while others may do the same.
	keyShare() string
	// caseInsensitiveLike is the LIKE operator that ignores case: SQLite's
	// LIKE already does for ASCII letters; PostgreSQL's LIKE never does.
	caseInsensitiveLike() string
	// planned returns a read's arguments so that the engine plans the
	// statement for them each time it runs, never by a plan cached for
	// any arguments: for the reads of the history by a range of time or
	// ids, whose rows a generic plan cannot estimate (decision 0096).
	planned(args []any) []any
	// cached returns a dispatcher statement's arguments so that the engine
	// keeps its plan, as the API's statements are kept, on the
	// dispatcher's connections that plan each statement by default: for
	// statements whose plan does not depend on their arguments and would
	// otherwise be planned at every delivery (decision 0097).
	cached(args []any) []any
	// lockMigrations makes concurrent migrators take turns; it is called
	// first in each migration's transaction.
	lockMigrations(ctx context.Context, tx *sql.Tx) error
	// announce tells other processes, after a commit, that logs became due
	// (no-op for SQLite).
	announce()
	// announceExpiries tells other processes, after a commit, that expiry
	// events were planned (no-op for SQLite, which one process holds).
	announceExpiries()
	close() error
}

// Store is herald's database.
type Store struct {
	eng    engine
	db     *sql.DB // reads; writes too where the engine allows many writers
	writer *sql.DB // the one connection SQLite writes through
	// deliveryDB is the dispatcher's own pool on PostgreSQL (lane.go); nil
	// on SQLite, and where pool_max_conns is too small to split.
	deliveryDB *sql.DB
	// leaseDB is the lease keeper's own connection on PostgreSQL (lane.go);
	// nil on SQLite, and where pool_max_conns is too small to split.
	leaseDB *sql.DB
	// webhookSets are the subscribed webhooks ChangeAndFire read, kept
	// with their version (webhookset.go; PostgreSQL).
	webhookSets webhookSets
	// keptTokens are the API tokens Authenticate found valid, kept a
	// second (kepttoken.go; PostgreSQL).
	keptTokens keptTokens
	// changeBatches gathers the changes of concurrent ChangeAndFire calls
	// into shared statements, run on changeDB, their own connections
	// (changebatch.go; PostgreSQL; nil where the pool is too small to
	// split, and then nothing is shared).
	changeBatches changeBatcher
	changeDB      *sql.DB
	// beforeChange, set by a test only, runs between ChangeAndFire's read
	// of the webhooks and its statement, at every try (PostgreSQL).
	beforeChange func()
	box          *secret.Box
	// reachGen counts this process's changes of webhooks' reach
	// (webhook_reach.go).
	reachGen reachGeneration
	now      func() time.Time
	// wallClock is set when now is the wall clock, which makes the ids
	// that NewID makes (by the wall clock), and those of the events and logs
	// fired before decision 0100, agree with the times stored beside them.
	wallClock bool
	log       *slog.Logger
	// logIDsExact is set on PostgreSQL, where every log created at or after
	// logIDsExactFrom (Unix ms; 0: every log) has an id of its created_at's
	// millisecond (decision 0100); older ones were given ids by the wall
	// clock up to idSlack after it.
	logIDsExact     bool
	logIDsExactFrom int64
	// eventLogIDs is set on PostgreSQL, where the logs of every event
	// triggered at or after eventLogIDsFrom (Unix ms; 0: every event) have
	// the ids LogIDOf makes, within EventLogIDs, and the logs have no index
	// on their event; older logs are found through their partitions' own
	// (migration 0088, decision 0104).
	eventLogIDs     bool
	eventLogIDsFrom int64
	// onFired is Options.OnFired.
	onFired func([]event.Kind)
	// onEmail is Options.OnEmail.
	onEmail func()

	group *committer // SQLite: write transactions committed in groups (group.go)

	// upTo is the newest migration applied at open, 0 for all: a test
	// opens an older schema to write rows as an older herald did, and the
	// statements that write a later column leave it out there (has).
	upTo int

	// where names the database in log lines: the SQLite file's path, or
	// "postgres" (never the URL, which may hold a password).
	where    string
	fullness fullState // writes refused for a full disk (full.go)
	// handoff is the dispatcher that takes the first attempts of what this
	// process fires (SetHandoff, decision 0105); nil hands over none.
	handoff atomic.Pointer[handoffBox]

	mu     sync.Mutex
	waiter chan struct{} // closed by wake; nil until someone waits
	// expiryWaiter is closed by ExpiriesChanged; nil until someone waits.
	expiryWaiter chan struct{}
	stmts        sync.Map // query text → rebound text

	// SQLite: statements prepared once per connection (see prepared).
	readStmts, writeStmts preparedSet
}

// Options configures Open.
type Options struct {
	// Key seals webhook tokens at rest. Required.
	Key []byte
	// Now is the clock; time.Now when nil. Tests pass a fixed clock.
	Now func() time.Time
	// Logger reports trouble in the store's own background work (the
	// PostgreSQL listener); slog.Default() when nil.
	Logger *slog.Logger
	// OnFired, when set, is told the kinds of the events each committed
	// transaction fired, after its commit (for metrics).
	OnFired func([]event.Kind)
	// OnEmail, when set, is called after a commit that queued an email
	// (a warning about a webhook's health), so the outbox looks at once.
	OnEmail func()
}

// Open connects to the database named by url ("sqlite:PATH" or
// "postgres://…"), applies pending migrations, and checks that the database
// was created with opts.Key.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	return open(ctx, url, opts, 0)
}

// open is Open applying migrations up to version upTo only (0: all), so a
// test can write rows as an older herald did and then migrate them.
func open(ctx context.Context, url string, opts Options, upTo int) (*Store, error) {
	box, err := secret.New(opts.Key)
	if err != nil {
		return nil, err
	}
	s := &Store{box: box, now: opts.Now, log: opts.Logger, onFired: opts.OnFired, onEmail: opts.OnEmail, upTo: upTo}
	s.changeBatches.atOnce = changeBatchesAtOnce
	if s.now == nil {
		s.now, s.wallClock = time.Now, true
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if err := CheckURL(url); err != nil {
		return nil, err
	}
	if strings.HasPrefix(url, "sqlite:") {
		err = openSQLite(ctx, s, strings.TrimPrefix(url, "sqlite:"))
	} else {
		err = openPostgres(ctx, s, url)
	}
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx, upTo); err != nil {
		s.Close()
		return nil, s.full(err)
	}
	if err := s.checkKey(ctx); err != nil {
		s.Close()
		return nil, s.full(err)
	}
	if s.eng.name() == "postgres" && (upTo == 0 || upTo >= 87) {
		if err := s.db.QueryRowContext(ctx, `SELECT since FROM log_ids_exact`).Scan(&s.logIDsExactFrom); err != nil {
			s.Close()
			return nil, fmt.Errorf("read log_ids_exact: %w", err)
		}
		s.logIDsExact = true
	}
	if s.eng.name() == "postgres" && (upTo == 0 || upTo >= 88) {
		if err := s.db.QueryRowContext(ctx, `SELECT since FROM event_log_ids`).Scan(&s.eventLogIDsFrom); err != nil {
			s.Close()
			return nil, fmt.Errorf("read event_log_ids: %w", err)
		}
		s.eventLogIDs = true
	}
	if s.eng.name() == "sqlite" {
		if err := journalInMemory(ctx, s.writer); err != nil {
			s.Close()
			return nil, err
		}
		s.group = newCommitter(s)
	}
	if upTo == 0 || upTo >= 70 {
		// The server goes on making them (MakePartitionsAhead); every
		// other command that writes history finds them made too. A miss
		// costs nothing that the default partition does not catch.
		if err := s.MakePartitionsAhead(ctx); err != nil {
			s.log.Warn("partitions ahead not made; rows go to the default partition until they are", "err", err)
		}
	}
	return s, nil
}

// CheckURL reports whether url names a database Open can open, without
// opening it, so that callers can refuse it before doing anything else.
func CheckURL(url string) error {
	switch {
	case strings.HasPrefix(url, "sqlite:"), strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return nil
	}
	return fmt.Errorf("open store: database URL must start with sqlite: or postgres://")
}

// ErrNoDatabase is CheckExists's answer for a SQLite file that is not there.
var ErrNoDatabase = errors.New("no such database file")

// CheckExists returns an error wrapping ErrNoDatabase when url names a SQLite
// file that does not exist, without creating it, so that a command can
// refuse a mistyped path rather than start a new, empty database under it.
// A PostgreSQL URL is not checked here: connecting to a database that does
// not exist fails by itself, and herald never creates one.
func CheckExists(url string) error {
	if err := CheckURL(url); err != nil {
		return err
	}
	path, ok := strings.CutPrefix(url, "sqlite:")
	if !ok {
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("open sqlite %s: %w", path, ErrNoDatabase)
	} else if err != nil {
		return fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return nil
}

// Engine names the database engine: "sqlite" or "postgres".
func (s *Store) Engine() string { return s.eng.name() }

// Close releases the database, once the write transactions already begun
// have committed.
func (s *Store) Close() error {
	if s.group != nil {
		s.group.close()
	}
	s.readStmts.close()
	s.writeStmts.close()
	return s.eng.close()
}

// has reports whether the schema holds migration version's changes: always
// but in a store a test opened at an older version (OpenAtVersion).
func (s *Store) has(version int) bool { return s.upTo == 0 || s.upTo >= version }

// Ping reports whether the database answers; /readyz uses it.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// checkKey records the key's check value on first open and refuses a
// different key later: opening with the wrong key would make every webhook
// token unreadable.
func (s *Store) checkKey(ctx context.Context) error {
	check := s.box.Check()
	var stored string
	err := s.writer.QueryRowContext(ctx, s.q(`SELECT value FROM settings WHERE name = 'key_check'`)).Scan(&stored)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = s.writer.ExecContext(ctx, s.q(`INSERT INTO settings (name, value) VALUES ('key_check', ?) ON CONFLICT (name) DO NOTHING`), check)
		if err != nil {
			return fmt.Errorf("record key check: %w", err)
		}
		return s.checkKey(ctx)
	}
	if err != nil {
		return fmt.Errorf("read key check: %w", err)
	}
	if stored != check {
		return errors.New("open store: the secret key is not the one this database was created with")
	}
	return nil
}

// q rebinds a query for the engine, once per distinct text.
func (s *Store) q(query string) string {
	if v, ok := s.stmts.Load(query); ok {
		return v.(string)
	}
	r := s.eng.rebind(query)
	s.stmts.Store(query, r)
	return r
}

// preparedSet holds statements prepared on one *sql.DB, which database/sql
// prepares on each of its connections once, at first use there. SQLite
// compiles a statement's text on every unprepared call: 14% of a busy
// herald's CPU went to parsing. Herald's statements have fixed shapes (lists
// go in as one JSON argument), so the set stays small; it is bounded all the
// same, past which statements run unprepared.
type preparedSet struct {
	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	wanted map[string]bool // writer statements to prepare once the connection is free
}

const maxPrepared = 512

// get returns db's prepared statement for query, preparing it the first
// time; nil when it cannot (the plain call then reports the error).
func (p *preparedSet) get(ctx context.Context, db *sql.DB, query string) *sql.Stmt {
	p.mu.Lock()
	st, ok := p.stmts[query]
	full := len(p.stmts) >= maxPrepared
	p.mu.Unlock()
	if ok || full {
		return st
	}
	// Not under the lock: preparing may wait for a connection, whose holder
	// may need the lock meanwhile.
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if prev, ok := p.stmts[query]; ok { // prepared meanwhile by another caller
		st.Close()
		return prev
	}
	if p.stmts == nil {
		p.stmts = map[string]*sql.Stmt{}
	}
	p.stmts[query] = st
	return st
}

// lookup returns query's prepared statement if there is one, and otherwise
// notes it, for prepareWanted. The writer's one connection is busy inside a
// transaction, so its statements are prepared between transactions.
func (p *preparedSet) lookup(query string) *sql.Stmt {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.stmts[query]; ok {
		return st
	}
	if len(p.stmts)+len(p.wanted) < maxPrepared {
		if p.wanted == nil {
			p.wanted = map[string]bool{}
		}
		p.wanted[query] = true
	}
	return nil
}

// prepareWanted prepares the statements lookup noted; the caller holds no
// transaction on db.
func (p *preparedSet) prepareWanted(ctx context.Context, db *sql.DB) {
	p.mu.Lock()
	wanted := p.wanted
	p.wanted = nil
	p.mu.Unlock()
	for q := range wanted {
		p.get(ctx, db, q)
	}
}

func (p *preparedSet) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, st := range p.stmts {
		st.Close()
	}
	p.stmts = nil
}

// prepares says whether this engine gains from database/sql's prepared
// statements. PostgreSQL's driver (pgx) already prepares and caches each
// statement text per connection by itself.
func (s *Store) prepares() bool { return s.eng.name() == "sqlite" }

// Tx is a write transaction. Licensing changes and the events they fire share
// one, so an event is never lost and never sent for a change that rolled back.
type Tx struct {
	s     *Store
	tx    *sql.Tx // nil for a change made in one statement (ChangeAndFire)
	run   runner  // what statements run on: tx, or that change's connection
	fired bool
	kinds []event.Kind         // of the events fired, for Options.OnFired
	stmts map[string]*sql.Stmt // this transaction's handles on the store's prepared statements
	// detached is set on SQLite's group commit, where one transaction holds
	// several callers' work: a caller's cancelled context must not interrupt
	// its statement, since SQLite answers an interrupted write by rolling back
	// the whole transaction, and with it every other caller's work. A
	// transaction that has begun runs to its commit or rollback.
	detached bool
	// changed is set when a statement changed rows while writes were being
	// refused for a full disk: its commit shows that there is space again.
	changed bool
	// ran counts the statements run, so that a test can hold a path to a
	// fixed number of them (fire_test.go: a batch costs what one event does).
	ran int
	// handoff, with a dispatcher to hand over to, holds the claims this
	// transaction's firings leased to it (handoff.go); on SQLite, those of
	// the group's transaction running now.
	handoff *handoffState
	// change is the statement a firing makes first and depends on, outside
	// a transaction block (ChangeAndFire on PostgreSQL); made is whether it
	// returned a row, and so whether anything was written.
	change *Change
	made   bool
	// seen is the version of the account's webhooks the change's
	// statement must still find, when its firing used a set kept from an
	// earlier read or kept the one it read (webhookset.go); uncached has it
	// read them afresh and check nothing, as ChangeAndFire's last try does.
	seen     *webhooksSeen
	uncached bool
	// token is the kept API token the change's statement checks
	// (kepttoken.go); nil when the request's token was read.
	token *TokenCheck
}

// runner is what a Tx runs its statements on: its *sql.Tx, or the
// *sql.Conn of a change made in one statement (ChangeAndFire).
type runner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ctx is the context a statement runs under.
func (tx *Tx) ctx(ctx context.Context) context.Context {
	if tx.detached {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// stmt returns the prepared statement for query within this transaction, or
// nil where the engine prepares by itself.
func (tx *Tx) stmt(ctx context.Context, query string) *sql.Stmt {
	if !tx.s.prepares() {
		return nil
	}
	if st, ok := tx.stmts[query]; ok {
		return st
	}
	var st *sql.Stmt
	if shared := tx.s.writeStmts.lookup(query); shared != nil {
		st = tx.tx.StmtContext(ctx, shared) // prepared once on the writer's connection
	} else {
		// Until the committer prepares it for good, prepared for this
		// transaction: a group shares one, so it is still parsed once.
		var err error
		if st, err = tx.tx.PrepareContext(ctx, query); err != nil {
			return nil // the plain call reports the error
		}
	}
	if tx.stmts == nil {
		tx.stmts = map[string]*sql.Stmt{}
	}
	tx.stmts[query] = st
	return st
}

// InTx runs fn in a write transaction, committing when fn returns nil. fn
// must do nothing but its transaction's work (no waiting on other things):
// on SQLite it runs in the group committer, with other callers' transactions
// in the same commit, and it returns only after that commit.
//
// Under a context carrying an idempotency claim (WithIdempotencyClaim), the
// transaction also marks the claim's key applied, so the change and its key
// commit together, or neither does.
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	if c := claimFrom(ctx); c != nil {
		change := fn
		fn = func(tx *Tx) error {
			if err := change(tx); err != nil {
				return err
			}
			return tx.markApplied(ctx, c)
		}
	}
	if s.group != nil {
		return s.full(s.group.do(ctx, fn))
	}
	sqltx, err := s.writerFor(ctx).BeginTx(ctx, nil)
	if err != nil {
		return s.full(fmt.Errorf("begin: %w", err))
	}
	tx := &Tx{s: s, tx: sqltx, run: sqltx}
	if h := s.handoffNow(); h != nil {
		tx.handoff = &handoffState{h: h}
		// Whatever ends fn, a panic included, ends its reservations.
		defer tx.endHandoff(false, false)
	}
	if err := fn(tx); err != nil {
		sqltx.Rollback()
		return s.full(err)
	}
	if err := sqltx.Commit(); err != nil {
		// The commit's answer may have been lost after it took effect.
		tx.endHandoff(false, !errors.Is(err, sql.ErrTxDone))
		return s.full(fmt.Errorf("commit: %w", err))
	}
	tx.endHandoff(true, false)
	if tx.changed {
		s.wrote()
	}
	s.firedKinds(tx.kinds)
	if tx.fired {
		s.wake()
		s.eng.announce()
	}
	return nil
}

// firedKinds tells Options.OnFired what a committed transaction fired.
func (s *Store) firedKinds(kinds []event.Kind) {
	if len(kinds) > 0 && s.onFired != nil {
		s.onFired(kinds)
	}
}

// Exec runs a statement written with ? placeholders.
func (tx *Tx) Exec(ctx context.Context, query string, args ...any) (res sql.Result, err error) {
	tx.ran++
	ctx = tx.ctx(ctx)
	q := tx.s.q(query)
	if st := tx.stmt(ctx, q); st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = tx.run.ExecContext(ctx, q, args...)
	}
	if err == nil && tx.s.fullness.on.Load() {
		n, _ := res.RowsAffected()
		tx.changed = tx.changed || n > 0
	}
	return res, err
}

// Query runs a query written with ? placeholders.
func (tx *Tx) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	tx.ran++
	ctx = tx.ctx(ctx)
	q := tx.s.q(query)
	if st := tx.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return tx.run.QueryContext(ctx, q, args...)
}

// QueryRow runs a one-row query written with ? placeholders.
func (tx *Tx) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	tx.ran++
	ctx = tx.ctx(ctx)
	q := tx.s.q(query)
	if st := tx.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.run.QueryRowContext(ctx, q, args...)
}

// ForUpdate is the engine's row-lock suffix for a SELECT in this transaction.
func (tx *Tx) ForUpdate() string { return tx.s.eng.forUpdate() }

// ForKeyShare is the engine's suffix for a SELECT whose rows must not be
// deleted before this transaction ends, e.g. a parent a child is inserted under.
func (tx *Tx) ForKeyShare() string { return tx.s.eng.keyShare() }

// Now is the store's clock.
func (tx *Tx) Now() time.Time { return tx.s.now() }

// Query runs a read query written with ? placeholders outside a transaction.
func (s *Store) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	q := s.q(query)
	if s.prepares() {
		if st := s.readStmts.get(ctx, s.db, q); st != nil {
			return st.QueryContext(ctx, args...)
		}
	}
	return s.reader(ctx).QueryContext(ctx, q, args...)
}

// QueryRow runs a one-row read query outside a transaction.
func (s *Store) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	q := s.q(query)
	if s.prepares() {
		if st := s.readStmts.get(ctx, s.db, q); st != nil {
			return st.QueryRowContext(ctx, args...)
		}
	}
	return s.reader(ctx).QueryRowContext(ctx, q, args...)
}

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// Wait returns a channel closed the next time this process commits an event
// or another process notifies that logs are due. Every caller until then
// shares one channel, so waiting costs nothing however often it is asked.
func (s *Store) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiter == nil {
		s.waiter = make(chan struct{})
	}
	return s.waiter
}

func (s *Store) wake() {
	s.mu.Lock()
	ch := s.waiter
	s.waiter = nil
	s.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// NewID is attempt.NewID: a new time-ordered id (UUIDv7), so ids sort by
// creation and serve as list cursors.
func NewID() string { return attempt.NewID() }

// ms converts a time to the stored Unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS converts stored Unix milliseconds to a UTC time.
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// optTime converts a nullable stored time.
func optTime(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}

// MS and FromMS expose the stored time representation to packages that
// write their own SQL through a Tx.
func MS(t time.Time) int64               { return ms(t) }
func FromMS(v int64) time.Time           { return fromMS(v) }
func OptTime(v sql.NullInt64) *time.Time { return optTime(v) }

// placeholders returns "?, ?, …" for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
