package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/health"
	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/webhook"
)

// Health is a webhook's operational state.
type Health = health.Status

// The states of the specification's health table (package health decides
// the transitions between them; the store persists them).
const (
	Healthy   = health.Healthy
	Unhealthy = health.Unhealthy
	Suspended = health.Suspended
)

// Webhook is a receiver an account configured.
type Webhook struct {
	ID        string
	AccountID string
	Name      string
	URL       string
	Events    []event.Kind
	Enabled   bool
	Status    Health
	CreatedAt time.Time
	UpdatedAt time.Time
	// UndeliveredCount counts its failed and suspended-cancelled logs
	// completed since it last left Healthy (0 while Healthy): what a
	// recovery would resend.
	UndeliveredCount int
	// LeftHealthyAt is when it last left Healthy; nil while Healthy.
	LeftHealthyAt *time.Time
	// Rotation is the token rotation under way, nil when none is (see
	// RotateWebhookToken).
	Rotation *TokenRotation
	// Filter is the JSON filter (internal/filter) an event's payload must
	// pass to be delivered to it; nil for none.
	Filter json.RawMessage
	// Headers are the custom headers sent with each of its requests, by
	// name; nil for none. Kept sealed; the API shows their values masked.
	Headers map[string]string
	// SignatureScheme is how its deliveries are signed: SchemeHerald,
	// SchemeStandardWebhooks or SchemeStandardEd25519.
	SignatureScheme string
	// RateLimit is how many deliveries per second it may be sent, by every
	// process together (see queue.ReserveSends); 0 for no limit.
	RateLimit int
	// RetryPolicy is its own retry policy; nil follows the operator's.
	RetryPolicy *RetryPolicy
	// DisabledReason is why herald disabled it (its receiver answered 410
	// Gone); "" when enabled, or disabled by its owner.
	DisabledReason string
	// Ordering is OrderingNone or OrderingLicense (ordering.go), and
	// OrderingOnFailure OnFailureHold or OnFailureContinue.
	Ordering, OrderingOnFailure string
	// SigningKey is the public half of its key pair when it signs with
	// SchemeStandardEd25519; nil otherwise.
	SigningKey *SigningKey
	// Type is TypeHTTP, or a destination's type (webhook_destination.go);
	// Config is a destination's config, opened (nil for http).
	Type   string
	Config json.RawMessage
	// WebhookReach is its body's form, client certificate and OAuth2
	// client (webhook_reach.go).
	WebhookReach
}

// Signature schemes of a webhook (attempt's).
const (
	SchemeHerald           = attempt.SchemeHerald
	SchemeStandardWebhooks = attempt.SchemeStandardWebhooks
	SchemeStandardEd25519  = attempt.SchemeStandardEd25519
)

// Subscribes reports whether w wants events of kind k.
func (w Webhook) Subscribes(k event.Kind) bool {
	for _, e := range w.Events {
		if e == k {
			return true
		}
	}
	return false
}

// NewWebhook holds what creating a webhook takes; the caller validates.
type NewWebhook struct {
	Name    string
	URL     string
	Events  []event.Kind
	Enabled bool
	Token   string
	Filter  json.RawMessage   // nil for none; parsed by the caller
	Headers map[string]string // nil for none; checked by the caller
	// SignatureScheme is SchemeHerald or SchemeStandardWebhooks; "" is
	// SchemeHerald.
	SignatureScheme string
	RateLimit       int // deliveries per second, 1 to MaxRateLimit; 0 for none
	// RetryPolicy is its own retry policy (checked by the caller); nil
	// follows the operator's.
	RetryPolicy *RetryPolicy
	// Ordering and OrderingOnFailure as Webhook's; "" for the defaults
	// (OrderingNone, OnFailureHold).
	Ordering, OrderingOnFailure string
	// Type and Config as Webhook's ("" is TypeHTTP), checked by the caller.
	Type   string
	Config json.RawMessage
	// Reach is its body's form, client certificate and OAuth2 client
	// (checked by the caller).
	Reach WebhookReach
}

// MaxRateLimit is the highest rate limit a webhook may have, in deliveries
// per second (the column's check holds it too).
const MaxRateLimit = 10000

// CreateWebhook stores a new, Healthy webhook with its token sealed.
func (s *Store) CreateWebhook(ctx context.Context, accountID string, n NewWebhook) (Webhook, error) {
	now := s.now()
	if n.SignatureScheme == "" {
		n.SignatureScheme = SchemeHerald
	}
	w := Webhook{SignatureScheme: n.SignatureScheme, ID: NewID(), AccountID: accountID, Name: n.Name, URL: n.URL, Events: n.Events,
		Enabled: n.Enabled, Status: Healthy, CreatedAt: fromMS(ms(now)), UpdatedAt: fromMS(ms(now)), Filter: n.Filter, Headers: n.Headers,
		RateLimit: n.RateLimit, RetryPolicy: n.RetryPolicy, Ordering: n.Ordering, OrderingOnFailure: n.OrderingOnFailure, WebhookReach: n.Reach}
	w.Type, w.Config = n.Type, n.Config
	if w.Type == "" {
		w.Type = TypeHTTP
	}
	if w.Payload == "" {
		w.Payload = PayloadFull
	}
	if w.TLS != nil {
		w.TLS.Subject, w.TLS.NotAfter, _ = CertificateInfo(w.TLS.ClientCertificate)
	}
	if w.Ordering == "" {
		w.Ordering = OrderingNone
	}
	if w.OrderingOnFailure == "" {
		w.OrderingOnFailure = OnFailureHold
	}
	if w.SignatureScheme == SchemeStandardEd25519 {
		k, err := signingKey(w.ID, WebhookTokens{Current: n.Token})
		if err != nil {
			return Webhook{}, fmt.Errorf("create webhook: %w", err)
		}
		w.SigningKey = &k
	}
	events, _ := json.Marshal(n.Events)
	err := s.InTx(ctx, func(tx *Tx) error {
		if err := checkWebhookCap(ctx, tx, accountID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO webhooks (id, account_id, name, url, events, enabled, status, token_sealed, created_at, updated_at, filter, headers_sealed, signature_scheme, rate_limit)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			w.ID, accountID, w.Name, w.URL, string(events), w.Enabled, string(Healthy),
			s.box.Seal([]byte(n.Token), []byte(w.ID)), ms(now), ms(now), rawText(n.Filter), s.sealHeaders(w.ID, n.Headers), n.SignatureScheme, rateLimitArg(n.RateLimit))
		if err != nil {
			return err
		}
		if err := s.setDestination(ctx, tx, w); err != nil {
			return err
		}
		if w.Ordering != OrderingNone || w.OrderingOnFailure != OnFailureHold {
			// Its own statement, as the retry policy's below.
			if _, err := tx.Exec(ctx, `UPDATE webhooks SET ordering = ?, ordering_on_failure = ? WHERE id = ?`, w.Ordering, w.OrderingOnFailure, w.ID); err != nil {
				return err
			}
		}
		if err := s.setReach(ctx, tx, w.ID, n.Reach.patch()); err != nil {
			return err
		}
		if n.RetryPolicy == nil {
			return nil
		}
		// Its own statement, so that a webhook without a policy is written
		// as before migration 0123 (which tests of older migrations do).
		_, err = tx.Exec(ctx, `UPDATE webhooks SET retry_policy = ? WHERE id = ?`, retryPolicyArg(n.RetryPolicy), w.ID)
		return err
	})
	var le *WebhookLimitError
	if errors.As(err, &le) {
		return Webhook{}, err
	}
	if err != nil {
		return Webhook{}, fmt.Errorf("create webhook: %w", err)
	}
	return w, nil
}

// WebhookLimitError is CreateWebhook's answer when the account already has
// as many webhooks as its limit allows.
type WebhookLimitError struct {
	Limit, Count int64
}

func (e *WebhookLimitError) Error() string {
	noun := "webhooks"
	if e.Limit == 1 {
		noun = "webhook"
	}
	return fmt.Sprintf("this account may have at most %d %s; it has %d", e.Limit, noun, e.Count)
}

// checkWebhookCap refuses one more webhook for an account at its cap. The
// account's row is locked first (on PostgreSQL; SQLite's writer holds the
// database's write lock from BEGIN), so concurrent creates for one account
// count one after another and never exceed the cap together.
func checkWebhookCap(ctx context.Context, tx *Tx, accountID string) error {
	var max sql.NullInt64
	if err := tx.QueryRow(ctx, `SELECT max_webhooks FROM accounts WHERE id = ?`+tx.ForUpdate(), accountID).Scan(&max); err != nil {
		return notFound(err, "read webhook limit")
	}
	if !max.Valid {
		return nil
	}
	var n int64
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM webhooks WHERE account_id = ?`, accountID).Scan(&n); err != nil {
		return fmt.Errorf("count webhooks: %w", err)
	}
	if n >= max.Int64 {
		return &WebhookLimitError{Limit: max.Int64, Count: n}
	}
	return nil
}

// webhookColumns reads a webhook with its rotation, when it last left
// Healthy and its undelivered count, the last through the partial index of
// undelivered logs (failed, or cancelled for a suspension) by webhook and
// completion (undelivered_at, migration 0060).
const webhookColumns = `id, account_id, name, url, events, enabled, status, created_at, updated_at, rotation_started_at, rotation_ends_at, left_healthy_at, filter, headers_sealed, signature_scheme, rate_limit, retry_policy, disabled_reason, ordering, ordering_on_failure, type, config_sealed,
(SELECT COUNT(*) FROM webhook_event_logs l WHERE l.webhook_id = webhooks.id AND webhooks.left_healthy_at IS NOT NULL
 AND l.undelivered_at >= webhooks.left_healthy_at)`

// scanWebhook reads a row of webhookColumns. A rotation whose end has come
// by now is shown ended, whether or not the sweep has erased its old token
// yet: from its end the next token signs (see signingTokens).
func (s *Store) scanWebhook(sc interface{ Scan(...any) error }, now time.Time) (Webhook, error) {
	var w Webhook
	var events, status string
	var c, u int64
	var started, ends, left sql.NullInt64
	var filter sql.NullString
	var headers []byte
	var err error
	var rate sql.NullInt64
	var retry, disabled sql.NullString
	var config []byte
	if err := sc.Scan(&w.ID, &w.AccountID, &w.Name, &w.URL, &events, &w.Enabled, &status, &c, &u, &started, &ends, &left, &filter, &headers, &w.SignatureScheme, &rate, &retry, &disabled, &w.Ordering, &w.OrderingOnFailure, &w.Type, &config, &w.UndeliveredCount); err != nil {
		return Webhook{}, err
	}
	if w.Config, err = s.openConfig(w.ID, config); err != nil {
		return Webhook{}, err
	}
	w.DisabledReason = disabled.String
	w.RateLimit = int(rate.Int64)
	if w.RetryPolicy, err = ScanRetryPolicy(w.ID, retry); err != nil {
		return Webhook{}, err
	}
	if w.Headers, err = s.openHeaders(w.ID, headers); err != nil {
		return Webhook{}, err
	}
	if filter.Valid {
		w.Filter = json.RawMessage(filter.String)
	}
	if err := jsonlimit.Unmarshal([]byte(events), &w.Events); err != nil {
		return Webhook{}, fmt.Errorf("webhook %s events: %w", w.ID, err)
	}
	w.Status, w.CreatedAt, w.UpdatedAt, w.LeftHealthyAt = Health(status), fromMS(c), fromMS(u), optTime(left)
	if started.Valid && ends.Valid && ends.Int64 > ms(now) {
		w.Rotation = &TokenRotation{StartedAt: fromMS(started.Int64), EndsAt: fromMS(ends.Int64)}
	}
	return w, nil
}

// Webhook returns one of an account's webhooks.
func (s *Store) Webhook(ctx context.Context, accountID, id string) (Webhook, error) {
	w, err := s.scanWebhook(s.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE account_id = ? AND id = ?`, accountID, id), s.now())
	if errors.Is(err, sql.ErrNoRows) {
		return Webhook{}, ErrNotFound
	}
	if err != nil {
		return Webhook{}, fmt.Errorf("read webhook: %w", err)
	}
	if w.SignatureScheme == SchemeStandardEd25519 {
		k, err := s.WebhookSigningKey(ctx, accountID, id)
		if err != nil {
			return Webhook{}, err
		}
		w.SigningKey = &k
	}
	one := []Webhook{w}
	if err := s.addReach(ctx, one); err != nil {
		return Webhook{}, err
	}
	return one[0], nil
}

// WebhookFilter narrows a webhook list.
type WebhookFilter struct {
	Status Health // "" for any
	// Search keeps webhooks whose name or URL contains it, ignoring the case
	// of ASCII letters on both engines (PostgreSQL's ILIKE folds other
	// letters too; SQLite's LIKE does not). "" for any.
	Search string
	Page
}

// where adds the filter's conditions to a query of webhooks.
func (f WebhookFilter) where(s *Store, q string, args []any) (string, []any) {
	if f.Status != "" {
		q += ` AND status = ?`
		args = append(args, string(f.Status))
	}
	if f.Search != "" {
		like := s.eng.caseInsensitiveLike()
		q += ` AND (name ` + like + ` ? ESCAPE '\' OR url ` + like + ` ? ESCAPE '\')`
		pattern := "%" + escapeLike(f.Search) + "%"
		args = append(args, pattern, pattern)
	}
	return q, args
}

// Webhooks lists an account's webhooks, newest first. next is the cursor of
// the following page, "" on the last.
func (s *Store) Webhooks(ctx context.Context, accountID string, f WebhookFilter) (list []Webhook, next string, err error) {
	w, err := s.WebhookWindow(ctx, accountID, f)
	return w.Items, w.Older, err
}

// WebhookWindow lists a page of an account's webhooks, newest first, with
// the cursors of the pages either side.
func (s *Store) WebhookWindow(ctx context.Context, accountID string, f WebhookFilter) (Window[Webhook], error) {
	q, args := f.where(s, `SELECT `+webhookColumns+` FROM webhooks WHERE account_id = ?`, []any{accountID})
	q, args = f.Page.applyTo("id", q, args)
	rows, err := s.Query(ctx, q, args...)
	if err != nil {
		return Window[Webhook]{}, fmt.Errorf("list webhooks: %w", err)
	}
	defer rows.Close()
	var list []Webhook
	now := s.now()
	for rows.Next() {
		w, err := s.scanWebhook(rows, now)
		if err != nil {
			return Window[Webhook]{}, fmt.Errorf("list webhooks: %w", err)
		}
		list = append(list, w)
	}
	if err := rows.Err(); err != nil {
		return Window[Webhook]{}, fmt.Errorf("list webhooks: %w", err)
	}
	rows.Close() // before the keys' query, on SQLite's one connection
	if err := s.addSigningKeys(ctx, accountID, list); err != nil {
		return Window[Webhook]{}, err
	}
	if err := s.addReach(ctx, list); err != nil {
		return Window[Webhook]{}, err
	}
	return window(list, f.Page, func(w Webhook) string { return w.ID }), nil
}

// CountWebhooks counts an account's webhooks that pass f (its Page is
// ignored). An account has thousands at most, counted through its index.
func (s *Store) CountWebhooks(ctx context.Context, accountID string, f WebhookFilter) (int, error) {
	q, args := f.where(s, `SELECT COUNT(*) FROM webhooks WHERE account_id = ?`, []any{accountID})
	var n int
	if err := s.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count webhooks: %w", err)
	}
	return n, nil
}

// WebhookNames returns the names of the account's webhooks among ids, by
// id, in one query; ids of other accounts' webhooks, or of none, are left
// out.
func (s *Store) WebhookNames(ctx context.Context, accountID string, ids []string) (map[string]string, error) {
	names := make(map[string]string, len(ids))
	if len(ids) == 0 {
		return names, nil
	}
	rows, err := s.Query(ctx, `SELECT id, name FROM webhooks WHERE account_id = ? AND id IN (SELECT value FROM json_texts(?))`,
		accountID, JSONTexts(ids))
	if err != nil {
		return nil, fmt.Errorf("read webhook names: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, fmt.Errorf("read webhook names: %w", err)
		}
		names[id] = name
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read webhook names: %w", err)
	}
	return names, nil
}

// WebhookPatch holds the fields to change; nil leaves a field as it is.
type WebhookPatch struct {
	Name    *string
	URL     *string
	Events  []event.Kind // nil: unchanged
	Enabled *bool
	Token   *string
	// Filter replaces the filter: nil leaves it, a pointer to nil removes
	// it.
	Filter *json.RawMessage
	// Headers replaces the custom headers: nil leaves them, a pointer to
	// an empty map removes them.
	Headers *map[string]string
	// SignatureScheme, when set, changes how deliveries are signed.
	SignatureScheme *string
	// RateLimit, when set, replaces the rate limit: a pointer to 0 removes
	// it.
	RateLimit *int
	// RetryPolicy, when set, replaces the retry policy: a pointer to nil
	// goes back to the operator's.
	RetryPolicy **RetryPolicy
	// Ordering and OrderingOnFailure, when set, replace the webhook's.
	// Rows held for it (ordering.go) go when it no longer holds.
	Ordering, OrderingOnFailure *string
	// Config, when set, replaces a destination's config (its type stays).
	Config *json.RawMessage
	// RecodeTokens, when set, rewrites the webhook's token and next token
	// (those kept, or Token) into another form of the same key, in the
	// same transaction: a webhook moved to the Standard Webhooks scheme
	// shows its secret in that scheme's form (the caller's rule).
	RecodeTokens func(token string) string
	// Reach changes its body's form, client certificate or OAuth2 client.
	Reach ReachPatch
}

// mayFreeLogs says whether the patch changes what bounds the claims of the
// webhook's logs: its rate limit, whether it is enabled, its ordering.
func (p WebhookPatch) mayFreeLogs() bool {
	return p.RateLimit != nil || p.Enabled != nil || p.Ordering != nil || p.OrderingOnFailure != nil
}

// rateLimitArg stores a rate limit, 0 (none) as NULL.
func rateLimitArg(n int) any {
	if n <= 0 {
		return nil
	}
	return n
}

// rawText stores a JSON document as text, nil as NULL.
func rawText(b json.RawMessage) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// UpdateWebhook changes a webhook.
func (s *Store) UpdateWebhook(ctx context.Context, accountID, id string, p WebhookPatch) (Webhook, error) {
	var events *string
	if p.Events != nil {
		b, _ := json.Marshal(p.Events)
		e := string(b)
		events = &e
	}
	var sealed []byte
	// A token set outright replaces the one that signs now and ends any
	// rotation under way, erasing its next token: the owner asked for this
	// token, not for an overlap.
	replaced := p.Token != nil
	if replaced {
		sealed = s.box.Seal([]byte(*p.Token), []byte(id))
	}
	var filter *string
	if p.Filter != nil {
		filter = rawText(*p.Filter)
	}
	var headers []byte
	if p.Headers != nil {
		headers = s.sealHeaders(id, *p.Headers)
	}
	var rate any
	if p.RateLimit != nil {
		rate = rateLimitArg(*p.RateLimit)
	}
	var retry any
	if p.RetryPolicy != nil {
		retry = retryPolicyArg(*p.RetryPolicy)
	}
	err := s.InTx(ctx, func(tx *Tx) error {
		sealed := sealed
		var nextSealed []byte
		if p.RecodeTokens != nil {
			var err error
			if sealed, nextSealed, err = s.recodeTokens(ctx, tx, accountID, id, p); err != nil {
				return err
			}
		}
		res, err := tx.Exec(ctx, `UPDATE webhooks SET name = COALESCE(?, name), url = COALESCE(?, url), events = COALESCE(?, events),
enabled = COALESCE(?, enabled), token_sealed = COALESCE(?, token_sealed), signature_scheme = COALESCE(?, signature_scheme),
filter = CASE WHEN ? THEN ? ELSE filter END, headers_sealed = CASE WHEN ? THEN ? ELSE headers_sealed END,
rate_limit = CASE WHEN ? THEN ? ELSE rate_limit END,
retry_policy = CASE WHEN ? THEN ? ELSE retry_policy END,
ordering = COALESCE(?, ordering), ordering_on_failure = COALESCE(?, ordering_on_failure),
disabled_reason = CASE WHEN ? THEN NULL ELSE disabled_reason END,
next_token_sealed = CASE WHEN ? THEN NULL ELSE COALESCE(?, next_token_sealed) END,
rotation_started_at = CASE WHEN ? THEN NULL ELSE rotation_started_at END,
rotation_ends_at = CASE WHEN ? THEN NULL ELSE rotation_ends_at END,
updated_at = ? WHERE account_id = ? AND id = ?`,
			p.Name, p.URL, events, p.Enabled, sealed, p.SignatureScheme, p.Filter != nil, filter, p.Headers != nil, headers, p.RateLimit != nil, rate, p.RetryPolicy != nil, retry, p.Ordering, p.OrderingOnFailure, p.Enabled != nil, replaced, nextSealed, replaced, replaced, ms(s.now()), accountID, id)
		if err != nil {
			return fmt.Errorf("update webhook: %w", err)
		}
		if err := MustAffect(res); err != nil {
			return err
		}
		if err := s.patchConfig(ctx, tx, accountID, id, p); err != nil {
			return err
		}
		if err := s.setReach(ctx, tx, id, p.Reach); err != nil {
			return err
		}
		if p.Ordering != nil || p.OrderingOnFailure != nil {
			return tx.releaseHeld(ctx, id)
		}
		return nil
	})
	if err != nil {
		return Webhook{}, err
	}
	if !p.Reach.empty() { // once committed, so a read after it sees the change
		s.reachGen.Add(1)
	}
	if p.mayFreeLogs() {
		// Logs the webhook's old settings kept from claims (a rate limit's
		// room, a disabled webhook, an order's hold) may be claimable now:
		// the dispatchers look at once, here and in every other process,
		// as after a firing, rather than at their next poll.
		s.wake()
		s.eng.announce()
	}
	return s.Webhook(ctx, accountID, id)
}

// recodeTokens reads a webhook's tokens in tx, locked, and returns them
// sealed again after p.RecodeTokens: the current one (p.Token's when it
// replaces it) and the next one of a rotation under way (nil when none, or
// when p.Token ends the rotation).
func (s *Store) recodeTokens(ctx context.Context, tx *Tx, accountID, id string, p WebhookPatch) (current, next []byte, err error) {
	var tok, nextTok []byte
	err = tx.QueryRow(ctx, `SELECT token_sealed, next_token_sealed FROM webhooks WHERE account_id = ? AND id = ?`+tx.ForUpdate(), accountID, id).Scan(&tok, &nextTok)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read webhook tokens: %w", err)
	}
	recode := func(sealed []byte) ([]byte, error) {
		plain, err := s.openToken(id, sealed)
		if err != nil {
			return nil, err
		}
		return s.box.Seal([]byte(p.RecodeTokens(plain)), []byte(id)), nil
	}
	if p.Token != nil {
		return s.box.Seal([]byte(p.RecodeTokens(*p.Token)), []byte(id)), nil, nil
	}
	if current, err = recode(tok); err != nil {
		return nil, nil, err
	}
	if nextTok != nil {
		if next, err = recode(nextTok); err != nil {
			return nil, nil, err
		}
	}
	return current, next, nil
}

// DeleteWebhook removes a webhook and its event logs.
func (s *Store) DeleteWebhook(ctx context.Context, accountID, id string) error {
	return s.InTx(ctx, func(tx *Tx) error {
		// The logs go by the foreign key's cascade; their attempts, which
		// have no foreign key on PostgreSQL's partitioned history
		// (decision 0090), go here first.
		if _, err := tx.Exec(ctx, `DELETE FROM webhook_attempts WHERE log_id IN (
  SELECT id FROM webhook_event_logs WHERE account_id = ? AND webhook_id = ?)`, accountID, id); err != nil {
			return fmt.Errorf("delete webhook: attempts: %w", err)
		}
		res, err := tx.Exec(ctx, `DELETE FROM webhooks WHERE account_id = ? AND id = ?`, accountID, id)
		if err != nil {
			return fmt.Errorf("delete webhook: %w", err)
		}
		return MustAffect(res)
	})
}

// WebhookToken returns the token that signs a webhook's webhook-signature
// header now: during a rotation the old one, from its end the next one.
func (s *Store) WebhookToken(ctx context.Context, accountID, id string) (string, error) {
	t, err := s.WebhookTokens(ctx, accountID, id)
	return t.Current, err
}

func (s *Store) openToken(webhookID string, sealed []byte) (string, error) {
	tok, err := s.box.Open(sealed, []byte(webhookID))
	if err != nil {
		return "", fmt.Errorf("webhook %s token: %w", webhookID, err)
	}
	return string(tok), nil
}

// standardSecrets is migration 0096's step: it shows the tokens of every
// standard-webhooks webhook in the Standard Webhooks form, "whsec_" and the
// base64 of the key; one in another form (a herald token, which signed with
// its own bytes) becomes "whsec_" and the base64 of those bytes, so that
// it signs with the same key as before (decision 0118).
func standardSecrets(ctx context.Context, s *Store, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, s.q(`SELECT id, token_sealed, next_token_sealed FROM webhooks WHERE signature_scheme = ?`), SchemeStandardWebhooks)
	if err != nil {
		return fmt.Errorf("read standard-webhooks tokens: %w", err)
	}
	type hook struct {
		id          string
		token, next []byte
	}
	var hooks []hook
	for rows.Next() {
		var h hook
		if err := rows.Scan(&h.id, &h.token, &h.next); err != nil {
			rows.Close()
			return fmt.Errorf("read standard-webhooks tokens: %w", err)
		}
		hooks = append(hooks, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read standard-webhooks tokens: %w", err)
	}
	recode := func(id string, sealed []byte) ([]byte, error) {
		if sealed == nil {
			return nil, nil
		}
		tok, err := s.openToken(id, sealed)
		if err != nil {
			return nil, err
		}
		if _, ok := webhook.StandardKey(tok); ok {
			return sealed, nil
		}
		return s.box.Seal([]byte(webhook.StandardSecret(tok)), []byte(id)), nil
	}
	for _, h := range hooks {
		tok, err := recode(h.id, h.token)
		if err != nil {
			return err
		}
		next, err := recode(h.id, h.next)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`UPDATE webhooks SET token_sealed = ?, next_token_sealed = ? WHERE id = ?`), tok, next, h.id); err != nil {
			return fmt.Errorf("recode standard-webhooks tokens: %w", err)
		}
	}
	return nil
}
