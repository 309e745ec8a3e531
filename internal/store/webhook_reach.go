package store

import (
	"context"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

// How a webhook's requests reach its receiver beyond its URL (migration
// 0137): the body's form, a client certificate and an OAuth2 client. The
// credentials are sealed under the server key, each under a context of its
// own (the webhook's id and the column), as the custom headers are.

// The forms of a webhook's body.
const (
	PayloadFull = "full" // the event's object in data
	PayloadThin = "thin" // the object's id and the API path to read it
)

// WebhookTLS is a webhook's client certificate for mutual TLS.
type WebhookTLS struct {
	ClientCertificate string // PEM
	ClientKey         string // PEM; kept sealed, never shown
	CACertificate     string // PEM; "" verifies the receiver with the system's roots
	// Subject and NotAfter are the client certificate's, read from it.
	Subject  string
	NotAfter time.Time
}

// WebhookOAuth2 is a webhook's OAuth2 client (client credentials grant);
// its ClientSecret is kept sealed, never shown.
type WebhookOAuth2 = attempt.OAuth2

// WebhookReach is what a webhook sets of the three; the zero value is the
// full body, no certificate, no token.
type WebhookReach struct {
	Payload string // PayloadFull or PayloadThin; "" is PayloadFull
	TLS     *WebhookTLS
	OAuth2  *WebhookOAuth2
}

// ReachPatch changes what it sets; nil leaves a field as it is, and a
// pointer to nil removes a certificate or a client.
type ReachPatch struct {
	Payload *string
	TLS     **WebhookTLS
	OAuth2  **WebhookOAuth2
}

func (p ReachPatch) empty() bool { return p.Payload == nil && p.TLS == nil && p.OAuth2 == nil }

func tlsContext(webhookID string) []byte    { return []byte(webhookID + "\x00tls") }
func oauth2Context(webhookID string) []byte { return []byte(webhookID + "\x00oauth2") }

// sealedTLS is what tls_sealed holds, opened.
type sealedTLS struct {
	Certificate string `json:"certificate"`
	Key         string `json:"key"`
	CA          string `json:"ca,omitempty"`
}

// CertificateInfo reads the subject and expiry of the first certificate in
// a PEM text.
func CertificateInfo(certPEM string) (subject string, notAfter time.Time, err error) {
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		return "", time.Time{}, errors.New("no PEM CERTIFICATE block")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", time.Time{}, err
	}
	return c.Subject.String(), c.NotAfter.UTC(), nil
}

// sealTLS seals t for webhookID, with its certificate's expiry (ms).
func (s *Store) sealTLS(webhookID string, t *WebhookTLS) (sealed []byte, notAfter any) {
	if t == nil {
		return nil, nil
	}
	b, _ := json.Marshal(sealedTLS{t.ClientCertificate, t.ClientKey, t.CACertificate}) // strings always marshal
	_, after, err := CertificateInfo(t.ClientCertificate)
	if err != nil { // checked by the caller; kept without an expiry if not
		return s.box.Seal(b, tlsContext(webhookID)), nil
	}
	return s.box.Seal(b, tlsContext(webhookID)), ms(after)
}

func (s *Store) sealOAuth2(webhookID string, o *WebhookOAuth2) []byte {
	if o == nil {
		return nil
	}
	b, _ := json.Marshal(o)
	return s.box.Seal(b, oauth2Context(webhookID))
}

func (s *Store) openTLS(webhookID string, sealed []byte) (*WebhookTLS, error) {
	if sealed == nil {
		return nil, nil
	}
	b, err := s.box.Open(sealed, tlsContext(webhookID))
	if err != nil {
		return nil, fmt.Errorf("webhook %s client certificate: %w", webhookID, err)
	}
	var t sealedTLS
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("webhook %s client certificate: %w", webhookID, err)
	}
	out := &WebhookTLS{ClientCertificate: t.Certificate, ClientKey: t.Key, CACertificate: t.CA}
	out.Subject, out.NotAfter, _ = CertificateInfo(t.Certificate) // checked when saved
	return out, nil
}

func (s *Store) openOAuth2(webhookID string, sealed []byte) (*WebhookOAuth2, error) {
	if sealed == nil {
		return nil, nil
	}
	b, err := s.box.Open(sealed, oauth2Context(webhookID))
	if err != nil {
		return nil, fmt.Errorf("webhook %s oauth2 client: %w", webhookID, err)
	}
	var o WebhookOAuth2
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("webhook %s oauth2 client: %w", webhookID, err)
	}
	return &o, nil
}

// setReach writes what p changes of webhook id's reach, in tx.
func (s *Store) setReach(ctx context.Context, tx *Tx, id string, p ReachPatch) error {
	if p.empty() {
		return nil
	}
	var tlsSealed []byte
	var notAfter any
	if p.TLS != nil {
		tlsSealed, notAfter = s.sealTLS(id, *p.TLS)
	}
	var oauth2Sealed []byte
	if p.OAuth2 != nil {
		oauth2Sealed = s.sealOAuth2(id, *p.OAuth2)
	}
	_, err := tx.Exec(ctx, `UPDATE webhooks SET payload = COALESCE(?, payload),
tls_sealed = CASE WHEN ? THEN ? ELSE tls_sealed END,
tls_not_after = CASE WHEN ? THEN ? ELSE tls_not_after END,
oauth2_sealed = CASE WHEN ? THEN ? ELSE oauth2_sealed END WHERE id = ?`,
		p.Payload, p.TLS != nil, tlsSealed, p.TLS != nil, notAfter, p.OAuth2 != nil, oauth2Sealed, id)
	if err != nil {
		return fmt.Errorf("set webhook reach: %w", err)
	}
	return nil
}

// Set is what p sets, for a new webhook (a removal sets nothing).
func (p ReachPatch) Set() WebhookReach {
	var r WebhookReach
	if p.Payload != nil {
		r.Payload = *p.Payload
	}
	if p.TLS != nil {
		r.TLS = *p.TLS
	}
	if p.OAuth2 != nil {
		r.OAuth2 = *p.OAuth2
	}
	return r
}

// patch is r as a patch that sets all of it.
func (r WebhookReach) patch() ReachPatch {
	var p ReachPatch
	if r.Payload != "" && r.Payload != PayloadFull {
		p.Payload = &r.Payload
	}
	if r.TLS != nil {
		p.TLS = &r.TLS
	}
	if r.OAuth2 != nil {
		p.OAuth2 = &r.OAuth2
	}
	return p
}

// addReach fills in the reach of listed webhooks, in one query.
func (s *Store) addReach(ctx context.Context, list []Webhook) error {
	if len(list) == 0 {
		return nil
	}
	ids := make([]string, len(list))
	at := make(map[string]int, len(list))
	for i, w := range list {
		ids[i], at[w.ID] = w.ID, i
	}
	rows, err := s.Query(ctx, `SELECT id, payload, tls_sealed, oauth2_sealed FROM webhooks WHERE id IN (SELECT value FROM json_texts(?))`, JSONTexts(ids))
	if err != nil {
		return fmt.Errorf("read webhooks' reach: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var r WebhookReach
		var tlsSealed, oauth2Sealed []byte
		if err := rows.Scan(&id, &r.Payload, &tlsSealed, &oauth2Sealed); err != nil {
			return fmt.Errorf("read webhooks' reach: %w", err)
		}
		if r.TLS, err = s.openTLS(id, tlsSealed); err != nil {
			return err
		}
		if r.OAuth2, err = s.openOAuth2(id, oauth2Sealed); err != nil {
			return err
		}
		if i, ok := at[id]; ok {
			list[i].WebhookReach = r
		}
	}
	return rows.Err()
}

// WebhookReach reads how the dispatcher reaches a webhook's receiver
// (package delivery keeps it a moment, see ReachGeneration);
// ErrNotFound when the webhook is gone.
func (s *Store) WebhookReach(ctx context.Context, webhookID string) (attempt.Reach, error) {
	var payload string
	var tlsSealed, oauth2Sealed []byte
	err := s.QueryRow(ctx, `SELECT payload, tls_sealed, oauth2_sealed FROM webhooks WHERE id = ?`, webhookID).Scan(&payload, &tlsSealed, &oauth2Sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return attempt.Reach{}, ErrNotFound
	}
	if err != nil {
		return attempt.Reach{}, fmt.Errorf("read webhook reach: %w", err)
	}
	r := attempt.Reach{Thin: payload == PayloadThin}
	t, err := s.openTLS(webhookID, tlsSealed)
	if err != nil {
		return attempt.Reach{}, err
	}
	if t != nil {
		r.TLS = &attempt.TLS{ClientCertificate: t.ClientCertificate, ClientKey: t.ClientKey, CACertificate: t.CACertificate}
	}
	if r.OAuth2, err = s.openOAuth2(webhookID, oauth2Sealed); err != nil {
		return attempt.Reach{}, err
	}
	return r, nil
}

// ReachGeneration moves whenever this process changes a webhook's reach,
// so that what a dispatcher keeps of it is read again at once here (other
// processes' changes reach it when what it keeps ages out).
func (s *Store) ReachGeneration() uint64 { return s.reachGen.Load() }

// reachGeneration is a Store's count of its reach changes.
type reachGeneration = atomic.Uint64
