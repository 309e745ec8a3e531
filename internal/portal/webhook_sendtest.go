package portal

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

type testData struct {
	Webhook           store.Webhook
	Event             event.Kind
	Other             []event.Kind // kinds the webhook does not subscribe to
	CheckVerification bool
	SignWith          delivery.SignedWith
	Errors            fieldErrors
	Result            *delivery.TestResult
}

func newTestData(hook store.Webhook) testData {
	d := testData{Webhook: hook}
	if len(hook.Events) > 0 {
		d.Event = hook.Events[0]
	}
	for _, k := range event.Kinds {
		if !hook.Subscribes(k) {
			d.Other = append(d.Other, k)
		}
	}
	return d
}

// testPage shows the Test form: the event (by default the first subscribed)
// and the option to check that the endpoint rejects wrong signatures; after
// a send, the stored result of that send (a flash), never a new one.
func (h *handler) testPage(w http.ResponseWriter, r *http.Request, s store.Session) error {
	hook, err := h.store.Webhook(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	d := newTestData(hook)
	if f := flashFrom(r.Context()); f.Form != nil {
		d.Event, d.CheckVerification = event.Kind(f.Form.Get("event")), f.Form.Get("checkVerification") == "on"
		d.SignWith = delivery.SignedWith(f.Form.Get("signWith"))
		d.Errors, d.Result = f.Errors, f.Test
	}
	return h.render(w, r, http.StatusOK, "webhook_test", d)
}

// sendTest sends the sample now, then shows what went and what came back on
// the Test page. A test is not logged and never changes the webhook's
// health; its result waits for the page in a flash, so a refresh shows the
// page rather than sending again.
func (h *handler) sendTest(w http.ResponseWriter, r *http.Request, s store.Session) error {
	hook, err := h.store.Webhook(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	page := "/webhooks/" + hook.ID + "/test"
	kind := event.Kind(r.PostForm.Get("event"))
	signWith := delivery.SignedWith(r.PostForm.Get("signWith"))
	var errs fieldErrors
	if !kind.Valid() {
		errs.add("event", fmt.Sprintf("Event %q is not a known event kind.", kind))
	}
	if signWith != "" && !signWith.Valid() {
		errs.add("signWith", "Choose the token that signs the test.")
	}
	if len(errs) > 0 {
		return h.refused(w, r, page, errs)
	}
	res, err := h.delivery.Test(r.Context(), s.AccountID, hook.ID, kind, delivery.TestOptions{CheckVerification: r.PostForm.Get("checkVerification") == "on", SignWith: signWith})
	if errors.Is(err, delivery.ErrNoRotation) {
		errs.add("signWith", "No token rotation is under way any more, so there is no next token. Nothing was sent.")
		return h.redirectWith(w, r, page, flash{Status: http.StatusConflict, Form: typed(r.PostForm), Errors: errs})
	}
	if errors.Is(err, delivery.ErrBusy) {
		errs.add("", "The webhook already has as many requests in flight as it may take. Nothing was sent; try again in a moment.")
		return h.redirectWith(w, r, page, flash{Status: http.StatusTooManyRequests, Form: typed(r.PostForm), Errors: errs})
	}
	if err != nil {
		return err
	}
	// Sent: this form's token is spent even though nothing was stored.
	if err := h.store.MarkIdempotencyApplied(r.Context()); err != nil {
		return err
	}
	return h.redirectWith(w, r, page, flash{Form: typed(r.PostForm), Test: &res})
}
