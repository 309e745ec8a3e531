package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/store"
)

// leaseChunk bounds the lease ids one statement names.
const leaseChunk = 500

// RenewLeases extends to until the lease of every held log still pending
// under that lease, in one statement per 500 logs (found by id, so its cost
// does not grow with the backlog). A dispatcher renews the leases it holds
// (attempts waiting, in flight or waiting to be recorded) well before they
// end, so that only a dead process's leases expire: an attempt slowed by a
// busy machine is never taken over by another process and sent twice. A log
// whose lease was already taken over carries another lease and is left alone,
// and on PostgreSQL so is one another transaction has locked (it returns
// without waiting for it; see below).
func (s *Queue) RenewLeases(ctx context.Context, held []attempt.Held, until time.Time) (int64, error) {
	var total int64
	for len(held) > 0 {
		chunk := held[:min(len(held), leaseChunk)]
		held = held[len(chunk):]
		ids := make([]string, 0, len(chunk))
		seen := map[string]bool{}
		var leases []string
		for _, h := range chunk {
			ids = append(ids, h.LogID)
			if !seen[h.Lease] {
				seen[h.Lease] = true
				leases = append(leases, h.Lease)
			}
		}
		q := `UPDATE delivery_queue SET lease_until = ?
WHERE log_id IN (SELECT value FROM json_texts(?)) AND lease IN (SELECT value FROM json_texts(?))`
		if s.postgres {
			// A row another transaction holds is being recorded, released
			// or taken over: its lease is that transaction's to settle, and
			// the next renewal (a third of a lease later) renews it if it is
			// still held. Waiting for it instead deadlocked with the
			// recordings, which lock their rows in another order: each
			// recording then waited a second for PostgreSQL to tell, the
			// process's slots stayed full, and its deliveries stopped
			// (decision 0116).
			q = `UPDATE delivery_queue SET lease_until = ?
WHERE log_id IN (SELECT log_id FROM delivery_queue
  WHERE log_id IN (SELECT value FROM json_texts(?)) AND lease IN (SELECT value FROM json_texts(?)) FOR NO KEY UPDATE SKIP LOCKED)`
		}
		res, err := s.st.Writer(ctx).ExecContext(ctx, s.st.Rebind(q), store.MS(until), store.JSONTexts(ids), store.JSONTexts(leases))
		if err != nil {
			return total, s.st.Full(fmt.Errorf("renew leases: %w", err))
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("renew leases: %w", err)
		}
		total += n
	}
	return total, nil
}

// Beat records that the dispatcher process named process is running at now:
// one committed write of its own row of delivery_processes, on the lease
// keeper's connection. The dispatcher beats every third of a lease, beside
// its renewal, and takes over leases that other processes let end only
// while its beats land promptly: a beat that does not land says the
// database may be stalled for every process, the leases' holders included,
// and a lease that ended then may belong to a live process (decision
// 0117). A write, not a read, since a stalled commit (its log not flushed)
// holds back renewals as much as a stalled statement.
func (s *Queue) Beat(ctx context.Context, process string, now time.Time) error {
	_, err := s.st.Writer(ctx).ExecContext(ctx, s.st.Rebind(`INSERT INTO delivery_processes (id, beat_at) VALUES (?, ?)
ON CONFLICT (id) DO UPDATE SET beat_at = excluded.beat_at`), process, store.MS(now))
	if err != nil {
		return s.st.Full(fmt.Errorf("beat: %w", err))
	}
	return nil
}

// EndBeats removes a stopping process's row of delivery_processes, and the
// rows of processes silent since before (those that died without
// stopping).
func (s *Queue) EndBeats(ctx context.Context, process string, before time.Time) error {
	_, err := s.st.Writer(ctx).ExecContext(ctx, s.st.Rebind(`DELETE FROM delivery_processes WHERE id = ? OR beat_at < ?`), process, store.MS(before))
	if err != nil {
		return fmt.Errorf("end beats: %w", err)
	}
	return nil
}

// ReleaseHeld makes every log still pending under one of leases due now and
// unleased, queued again (or retrying, once attempted), as a Release outcome
// does. A stopping dispatcher calls it with the leases it took, once its
// attempts in flight are recorded: what is left under them was claimed but
// never attempted (a claim cut short by the stop, or logs still waiting for
// their webhook's gate), and is due at once, for this process's successor or
// another process, rather than when the lease would have ended.
func (s *Queue) ReleaseHeld(ctx context.Context, leases []string) (int64, error) {
	var total int64
	for len(leases) > 0 {
		chunk := leases[:min(len(leases), leaseChunk)]
		leases = leases[len(chunk):]
		now := store.MS(s.st.Now())
		var n int64
		err := s.inTx(ctx, func(tx txn) error {
			// The log itself already reads queued or retrying: a claim never
			// wrote it.
			res, err := tx.Exec(ctx, `UPDATE delivery_queue SET due_at = ?, lease = NULL, lease_until = NULL
WHERE lease IN (SELECT value FROM json_texts(?))`, now, store.JSONTexts(chunk))
			if err != nil {
				return err
			}
			if n, err = res.RowsAffected(); n > 0 {
				tx.MarkDue() // due now: wake this process's and the others' dispatchers
			}
			return err
		})
		if err != nil {
			return total, fmt.Errorf("release held logs: %w", err)
		}
		total += n
	}
	return total, nil
}

// Churn is how many rows of delivery_queue this process's claims and
// recordings have rewritten or deleted since the queue was made: the dead
// row versions they left, which Vacuum and Reclaim reclaim. A
// claim's index scan steps over the dead versions at the front of each
// webhook's due range until they are reclaimed, so the server reclaims by
// churn as well as vacuuming by time.
func (s *Queue) Churn() int64 { return s.churn.Load() }

// Vacuum reclaims the space of delivery_queue's deleted rows and
// refreshes its statistics, on PostgreSQL; SQLite reuses freed pages by
// itself. Every completed delivery leaves a dead queue row, and herald does
// not count on autovacuum (some operators run without it): without this the
// table would only grow, and its claim index with it. SKIP_LOCKED: when
// another process is vacuuming it, this one passes. It never gives the
// table's empty end back to the file system (TRUNCATE false): that takes
// the table's exclusive lock, and while it holds it (a truncation waits for
// its log to be flushed, and the disk may be slow) every claim, recording
// and renewal of every process queues behind it (decision 0117). The space
// stays the table's, for its next rows.
func (s *Queue) Vacuum(ctx context.Context) error {
	if !s.postgres {
		return nil
	}
	if _, err := s.st.Writer(ctx).ExecContext(ctx, `VACUUM (SKIP_LOCKED, TRUNCATE false, ANALYZE) delivery_queue`); err != nil {
		return fmt.Errorf("vacuum the delivery queue: %w", err)
	}
	return nil
}

// Reclaim reclaims delivery_queue's dead row versions and does nothing
// else, on PostgreSQL: no ANALYZE, which Vacuum adds, and, like it, no
// truncation of the empty pages at the table's end. Run by churn (every
// second or so at thousands of deliveries a second), VACUUM took 250-400 ms
// a call with the truncation and 2-7 ms without (decision 0103).
func (s *Queue) Reclaim(ctx context.Context) error {
	if !s.postgres {
		return nil
	}
	if _, err := s.st.Writer(ctx).ExecContext(ctx, `VACUUM (SKIP_LOCKED, TRUNCATE false) delivery_queue`); err != nil {
		return fmt.Errorf("reclaim the delivery queue's dead rows: %w", err)
	}
	return nil
}

// StillHeld reports which of the claimed logs still exist under their
// leases: one missing from the answer was deleted with its webhook or
// account, or its lease was taken over. One statement checks them all, so
// the attempts that check at once share a round trip (see delivery).
func (s *Queue) StillHeld(ctx context.Context, held []attempt.Held) (map[attempt.Held]bool, error) {
	ids := make([]string, len(held))
	for i, h := range held {
		ids[i] = h.LogID
	}
	rows, err := s.st.Query(ctx, `SELECT log_id, lease FROM delivery_queue WHERE log_id IN (SELECT value FROM json_texts(?)) AND lease IS NOT NULL`, store.JSONTexts(ids))
	if err != nil {
		return nil, fmt.Errorf("check claimed logs: %w", err)
	}
	defer rows.Close()
	found := make(map[attempt.Held]bool, len(held))
	for rows.Next() {
		var h attempt.Held
		if err := rows.Scan(&h.LogID, &h.Lease); err != nil {
			return nil, fmt.Errorf("check claimed logs: %w", err)
		}
		found[h] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check claimed logs: %w", err)
	}
	return found, nil
}
