package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/internal/auth"
	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
)

// The pull channel (decision 0140): a pull webhook's consumer reads its
// events with a pull token (a credential for that one webhook) or an API
// token, and acknowledges them by cursor.

// pullWebhookKey holds the one webhook a request's pull token may read.
type pullWebhookKey struct{}

// pullRoutes are the only calls a pull token may make, each on its own
// webhook only.
var pullRoutes = map[string]bool{
	"GET /v3/webhooks/{id}/events":      true,
	"POST /v3/webhooks/{id}/events/ack": true,
}

// Bounds of a read.
const (
	defaultPullLimit = 100
	maxPullLimit     = 1000
	// maxPullWait is the longest a read waits for an event: below the
	// minute after which proxies commonly cut an idle request.
	maxPullWait = 50
)

// authenticatePull serves a request made with a pull token: only the
// pull routes, for the token's own webhook, with the limits of any token.
func (a *API) authenticatePull(w http.ResponseWriter, r *http.Request, token string, next http.Handler) {
	hash := auth.HashToken(token)
	acct, tok, err := a.store.PullTokenByHash(r.Context(), hash)
	if errors.Is(err, store.ErrNotFound) {
		a.refuseToken(w, r, token)
		return
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if !a.allow(w, r, a.limits.ByCredential(hash), "pull token") {
		return
	}
	if _, pattern := a.mux.Handler(r); !pullRoutes[pattern] {
		a.writeError(w, r, problem(http.StatusForbidden, "pull-token", "Forbidden",
			"a pull token may only read and acknowledge its webhook's events (GET …/events, POST …/events/ack); use an API token for anything else"))
		return
	}
	ctx := context.WithValue(context.WithValue(r.Context(), accountKey{}, acct), scopeKey{}, store.ScopeRead)
	next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, pullWebhookKey{}, tok.WebhookID)))
}

// pullWebhook returns the webhook the request reads: its path's, unless
// its pull token is for another one, which it cannot tell from none.
func pullWebhook(r *http.Request) (string, error) {
	id := pathID(r, "id")
	if own, ok := r.Context().Value(pullWebhookKey{}).(string); ok && own != id {
		return "", notFound("pull webhook")
	}
	return id, nil
}

type pullTokenJSON struct {
	Token string `json:"token"`
}

// createPullToken makes a pull token for a pull webhook; its secret is in
// this answer only.
func (a *API) createPullToken(w http.ResponseWriter, r *http.Request) error {
	id := pathID(r, "id")
	token := auth.NewPullToken()
	_, err := a.store.CreatePullToken(r.Context(), accountID(r), id, auth.HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return a.notPull(r, id)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusCreated, pullTokenJSON{Token: token})
}

// notPull answers a pull call on a webhook that is not a pull webhook: 404
// when the account has no such webhook, 409 when it is of another type.
func (a *API) notPull(r *http.Request, id string) error {
	if _, err := a.store.Webhook(r.Context(), accountID(r), id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return notFound("webhook")
		}
		return err
	}
	return problem(http.StatusConflict, "not-pull", "Not a pull webhook",
		"this webhook delivers its events itself; only a webhook of type pull is read through …/events")
}

type pulledJSON struct {
	Cursor  string            `json:"cursor"`
	ID      string            `json:"id"`
	LogID   string            `json:"logId"`
	Event   event.Kind        `json:"event"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

type pulledListJSON struct {
	Data   []pulledJSON `json:"data"`
	Cursor string       `json:"cursor"`
}

// readEvents answers a pull webhook's events after a cursor, waiting up to
// waitSeconds for one when none is ready.
func (a *API) readEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := pullWebhook(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var v Invalid
	after := cursorParam(q.Get("after"), "after", &v)
	limit := intParam(q.Get("limit"), "limit", 1, maxPullLimit, defaultPullLimit, &v)
	wait := intParam(q.Get("waitSeconds"), "waitSeconds", 0, maxPullWait, 0, &v)
	if err := v.Err(); err != nil {
		return err
	}
	pulled, err := a.queue.PullWait(r.Context(), accountID(r), id, after, limit, time.Duration(wait)*time.Second)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return a.notPull(r, id)
	case errors.Is(err, queue.ErrCursor):
		return Invalid{{"after", "is past the last event read: pass a cursor this webhook answered"}}.Err()
	case err != nil:
		return err
	}
	out := pulledListJSON{Data: make([]pulledJSON, 0, len(pulled)), Cursor: strconv.FormatInt(after, 10)}
	now := a.store.Now() // the Standard Webhooks timestamp: the moment of the read
	// A webhook that wants thin events reads them thin, as it would be
	// POSTed them.
	var reach attempt.Reach
	if len(pulled) > 0 {
		if reach, err = a.store.WebhookReach(r.Context(), id); err != nil {
			return err
		}
	}
	for _, p := range pulled {
		if reach.Thin {
			if p.Body, err = event.Thin(p.Body); err != nil {
				return err
			}
		}
		h, err := delivery.Signed(p.Claim, now)
		if err != nil {
			return err
		}
		headers := make(map[string]string, len(h))
		for name, values := range h {
			headers[name] = values[0]
		}
		c := strconv.FormatInt(p.Cursor, 10)
		out.Data = append(out.Data, pulledJSON{Cursor: c, ID: p.EventID, LogID: p.LogID, Event: event.Kind(p.Event), Headers: headers, Body: string(p.Body)})
		out.Cursor = c
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusOK, out)
}

type ackJSON struct {
	Acknowledged int `json:"acknowledged"`
}

// ackEvents completes every event of a pull webhook read up to a cursor.
func (a *API) ackEvents(w http.ResponseWriter, r *http.Request) error {
	id, err := pullWebhook(r)
	if err != nil {
		return err
	}
	var in struct {
		Cursor *string `json:"cursor"`
	}
	if err := decode(w, r, &in, false); err != nil {
		return err
	}
	var v Invalid
	var cursor int64
	if in.Cursor == nil || *in.Cursor == "" {
		v.Add("cursor", "is required: the cursor of the last event to acknowledge")
	} else {
		cursor = cursorParam(*in.Cursor, "cursor", &v)
	}
	if err := v.Err(); err != nil {
		return err
	}
	n, err := a.queue.AckPull(r.Context(), accountID(r), id, cursor)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return a.notPull(r, id)
	case errors.Is(err, queue.ErrCursor):
		return Invalid{{"cursor", "is past the last event read: pass a cursor this webhook answered"}}.Err()
	case err != nil:
		return err
	}
	return writeJSON(w, http.StatusOK, ackJSON{Acknowledged: n})
}

// cursorParam reads a cursor: "" is 0 (before every event); otherwise the
// whole number a read answered.
func cursorParam(s, field string, v *Invalid) int64 {
	if s == "" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		v.Add(field, "must be a cursor a read of this webhook answered")
		return 0
	}
	return n
}

// intParam reads an optional whole number from lo to hi, def when absent.
func intParam(s, field string, lo, hi, def int, v *Invalid) int {
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		v.Add(field, "must be a whole number from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
		return def
	}
	return n
}
