package store

import (
	"context"
	"fmt"
	"time"
)

// EmailCertificateExpiring is the email of a webhook whose client
// certificate expires within CertificateWarning.
const EmailCertificateExpiring = "certificate-expiring"

// CertificateWarning is how long before a webhook's client certificate
// expires its owner is emailed.
const CertificateWarning = 14 * 24 * time.Hour

// WarnExpiringCertificates queues an email for each webhook whose client
// certificate expires within CertificateWarning of now and whose owner was
// not yet warned of that expiry, and returns how many it queued. A webhook
// is marked warned (tls_warned_for, the expiry warned of) by a conditional
// UPDATE in the transaction that queues its email, so several processes
// warn once; a new certificate, with another expiry, is warned of again.
func (s *Store) WarnExpiringCertificates(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := s.InTx(ctx, func(tx *Tx) error {
		n = 0
		lock := "" // as RemindSuspended: in id order, passing over rows held
		if tx.ForUpdate() != "" {
			lock = tx.ForUpdate() + " SKIP LOCKED"
		}
		due := `tls_not_after IS NOT NULL AND tls_not_after <= ? AND (tls_warned_for IS NULL OR tls_warned_for <> tls_not_after)`
		rows, err := tx.Query(ctx, `UPDATE webhooks SET tls_warned_for = tls_not_after
WHERE id IN (SELECT id FROM webhooks WHERE `+due+` ORDER BY id LIMIT 100`+lock+`) AND `+due+`
RETURNING id, account_id, name, url, tls_not_after`,
			ms(now.Add(CertificateWarning)), ms(now.Add(CertificateWarning)))
		if err != nil {
			return fmt.Errorf("mark certificate warnings: %w", err)
		}
		type warning struct {
			accountID string
			facts     EmailFacts
		}
		var due2 []warning
		for rows.Next() {
			var w warning
			var notAfter int64
			if err := rows.Scan(&w.facts.WebhookID, &w.accountID, &w.facts.Name, &w.facts.URL, &notAfter); err != nil {
				rows.Close()
				return fmt.Errorf("mark certificate warnings: %w", err)
			}
			w.facts.ExpiresAt = fromMS(notAfter).UTC()
			due2 = append(due2, w)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("mark certificate warnings: %w", err)
		}
		for _, w := range due2 {
			if err := tx.QueueEmail(ctx, w.accountID, EmailCertificateExpiring, w.facts, now); err != nil {
				return err
			}
		}
		n = len(due2)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("warn of expiring client certificates: %w", err)
	}
	if n > 0 && s.onEmail != nil {
		s.onEmail()
	}
	return n, nil
}
