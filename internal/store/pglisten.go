package store

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// announcer sends NOTIFY on its channel after commits that asked for it (on
// herald_due, commits that fired events; on herald_expiry, commits that
// planned expiry events), at most once per announceEvery however many
// commits there were.
//
// It does not NOTIFY inside the event's own transaction, as that would cost
// every such commit: PostgreSQL serialises the commits of all transactions
// that notified (they queue on one lock while their WAL is flushed), which
// capped firing at about 400 events/s in the three-process test here, against
// about 670/s without. Announced after commit, a notification can be lost if
// the process dies in between; the dispatchers' polling covers that.
type announcer struct {
	db      *sql.DB
	channel string
	own     *senders
	log     *slog.Logger
	kicks   chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
}

const announceEvery = 10 * time.Millisecond

func startAnnouncer(db *sql.DB, channel string, own *senders, log *slog.Logger) *announcer {
	ctx, cancel := context.WithCancel(context.Background())
	a := &announcer{db: db, channel: channel, own: own, log: log, kicks: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go a.run(ctx)
	return a
}

// kick asks for an announcement soon; it never blocks.
func (a *announcer) kick() {
	select {
	case a.kicks <- struct{}{}:
	default:
	}
}

func (a *announcer) stop() {
	a.cancel()
	<-a.done
}

func (a *announcer) run(ctx context.Context) {
	defer close(a.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.kicks:
		}
		notify, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := a.announce(notify)
		cancel()
		if err != nil && ctx.Err() == nil {
			a.log.Debug("announce on "+a.channel+"; other processes will find out by polling", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(announceEvery):
		}
	}
}

// announce sends one NOTIFY, its connection's backend noted as this
// process's first: the notification reaches the listeners at its commit,
// before the statement's answer reaches here.
func (a *announcer) announce(ctx context.Context) error {
	conn, err := a.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error {
		if c, ok := dc.(*stdlib.Conn); ok {
			a.own.add(c.Conn().PgConn().PID())
		}
		return nil
	}); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, `SELECT pg_notify('`+a.channel+`', current_schema())`)
	return err
}

// senders are the server processes (backends) of this process's own
// connections that announced lately. This process woke its own dispatcher
// or expiry runner before announcing (Store.wake, Store.ExpiriesChanged),
// so its listener passes over their notifications: heard back, each cost a
// second claim that found nothing (at 200 events a second, about one in
// two). A backend of a connection that closed is forgotten after
// sendersKept, in which the server's host would have to go through its
// process ids to give one to another connection; were it to, that
// connection's notifications would wait here for the dispatcher's poll.
type senders struct {
	mu   sync.Mutex
	seen map[uint32]time.Time
}

const sendersKept = time.Minute

func (s *senders) add(pid uint32) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[uint32]time.Time{}
	}
	s.seen[pid] = now
	for p, at := range s.seen {
		if now.Sub(at) > sendersKept {
			delete(s.seen, p)
		}
	}
}

func (s *senders) has(pid uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.seen[pid]
	return ok && time.Since(at) <= sendersKept
}

// listener holds one connection of its own in LISTEN on each of its
// channels (herald_due, herald_expiry) and calls the channel's wake whenever
// another process announces on it (this one's own are passed over, see
// senders): new due logs for the
// dispatcher, a planned expiry instant for the expiry runner. It reconnects
// with backoff when the connection drops, and calls every wake on every
// reconnect, since announcements made while it was away are lost. The
// dispatcher and the expiry runner also poll, so a lost announcement delays
// their work by at most their poll interval.
type listener struct {
	cfg    *pgx.ConnConfig
	wakes  map[string]func() // by channel
	own    *senders          // whose notifications are this process's own
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
}

// How the listener checks its connection and backs off.
const (
	listenIdleCheck  = 30 * time.Second // ping after this long without a notification
	listenMaxBackoff = 5 * time.Second
)

// listenerName is the listener connection's application_name, so that an
// operator reading pg_stat_activity can tell it from the pool's connections.
const listenerName = "herald-listen"

func startListener(cfg *pgx.ConnConfig, wakes map[string]func(), own *senders, log *slog.Logger) *listener {
	cfg = cfg.Copy()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = listenerName
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{cfg: cfg, wakes: wakes, own: own, log: log, cancel: cancel, done: make(chan struct{})}
	go l.run(ctx)
	return l
}

func (l *listener) stop() {
	l.cancel()
	<-l.done
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	backoff := 100 * time.Millisecond
	for {
		connected, err := l.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		if connected {
			backoff = 100 * time.Millisecond
		}
		l.log.Warn("listen for due event logs: reconnecting", "in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, listenMaxBackoff)
	}
}

// listen connects, listens and relays notifications until the connection
// fails or ctx ends. It reports whether it got as far as listening.
func (l *listener) listen(ctx context.Context) (bool, error) {
	conn, err := pgx.ConnectConfig(ctx, l.cfg.Copy())
	if err != nil {
		return false, err
	}
	defer func() {
		closing, cancel := context.WithTimeout(context.Background(), time.Second)
		conn.Close(closing)
		cancel()
	}()
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return false, err
	}
	for channel := range l.wakes {
		if _, err := conn.Exec(ctx, `LISTEN `+channel); err != nil {
			return false, err
		}
	}
	// Whatever was announced while no listener was connected went unheard.
	for _, wake := range l.wakes {
		wake()
	}
	for {
		wait, cancel := context.WithTimeout(ctx, listenIdleCheck)
		n, err := conn.WaitForNotification(wait)
		cancel()
		switch {
		case err == nil:
			if wake := l.wakes[n.Channel]; wake != nil && (n.Payload == schema || n.Payload == "") && !l.own.has(n.PID) {
				wake()
			}
		case ctx.Err() != nil:
			return true, ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			// Quiet for a while: make sure the connection still answers, so
			// a half-open TCP connection does not leave this process deaf.
			ping, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := conn.Ping(ping)
			cancel()
			if err != nil {
				return true, err
			}
		default:
			return true, err
		}
	}
}
