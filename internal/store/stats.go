package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// HourOfAttempts counts a webhook's attempts in one hour.
type HourOfAttempts struct {
	Start     time.Time
	Attempts  int
	Succeeded int
}

// AttemptsByHour counts a webhook's attempts, automatic and resent, sent at
// or after since, in hours counted from since. Hours without attempts are
// left out. Test sends are not attempts and never count. The charts read
// attempts by their own webhook column (migration 0075), which attempts
// made before that and more than eight days before it lack: no chart
// looks that far back.
func (s *Store) AttemptsByHour(ctx context.Context, accountID, webhookID string, since time.Time) ([]HourOfAttempts, error) {
	const hour = int64(time.Hour / time.Millisecond)
	rows, err := s.Query(ctx, `SELECT (a.sent_at - ?) / ? AS bucket, COUNT(*), SUM(CASE WHEN a.error IS NULL THEN 1 ELSE 0 END)
FROM webhook_attempts a
WHERE a.webhook_id = (SELECT id FROM webhooks WHERE id = ? AND account_id = ?) AND a.sent_at >= ?
GROUP BY 1 ORDER BY 1`, ms(since), hour, webhookID, accountID, ms(since))
	if err != nil {
		return nil, fmt.Errorf("attempts by hour: %w", err)
	}
	defer rows.Close()
	var out []HourOfAttempts
	for rows.Next() {
		var h, n, ok int64
		if err := rows.Scan(&h, &n, &ok); err != nil {
			return nil, fmt.Errorf("attempts by hour: %w", err)
		}
		out = append(out, HourOfAttempts{Start: fromMS(ms(since) + h*hour), Attempts: int(n), Succeeded: int(ok)})
	}
	return out, rows.Err()
}

// AttemptPoint is one attempt as a latency chart sees it.
type AttemptPoint struct {
	SentAt     time.Time
	DurationMS int64
	StatusCode *int
	Succeeded  bool
}

// LatestAttempts returns a webhook's most recent attempts sent at or after
// since, at most limit, oldest first.
func (s *Store) LatestAttempts(ctx context.Context, accountID, webhookID string, since time.Time, limit int) ([]AttemptPoint, error) {
	rows, err := s.Query(ctx, `SELECT a.sent_at, a.duration_ms, a.status_code, a.error
FROM webhook_attempts a
WHERE a.webhook_id = (SELECT id FROM webhooks WHERE id = ? AND account_id = ?) AND a.sent_at >= ?
ORDER BY a.sent_at DESC, a.log_id DESC, a.number DESC LIMIT ?`, webhookID, accountID, ms(since), limit)
	if err != nil {
		return nil, fmt.Errorf("latest attempts: %w", err)
	}
	defer rows.Close()
	var out []AttemptPoint
	for rows.Next() {
		var p AttemptPoint
		var sent int64
		var code sql.NullInt64
		var errText sql.NullString
		if err := rows.Scan(&sent, &p.DurationMS, &code, &errText); err != nil {
			return nil, fmt.Errorf("latest attempts: %w", err)
		}
		p.SentAt, p.Succeeded = fromMS(sent), !errText.Valid
		if code.Valid {
			v := int(code.Int64)
			p.StatusCode = &v
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("latest attempts: %w", err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
