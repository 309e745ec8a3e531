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
// and the option to check that the endpoint rejects wrong signatures.
func (h *handler) testPage(w http.ResponseWriter, r *http.Request, s store.Session) error {
	hook, err := h.store.Webhook(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	return h.render(w, r, http.StatusOK, "webhook_test", newTestData(hook))
}

// sendTest sends the sample now and shows what went and what came back. A
// test is not logged and never changes the webhook's health.
func (h *handler) sendTest(w http.ResponseWriter, r *http.Request, s store.Session) error {
	hook, err := h.store.Webhook(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	d := newTestData(hook)
	d.Event, d.CheckVerification = event.Kind(r.PostForm.Get("event")), r.PostForm.Get("checkVerification") == "on"
	d.SignWith = delivery.SignedWith(r.PostForm.Get("signWith"))
	if !d.Event.Valid() {
		d.Errors.add("event", fmt.Sprintf("Event %q is not a known event kind.", d.Event))
	}
	if d.SignWith != "" && !d.SignWith.Valid() {
		d.Errors.add("signWith", "Choose the token that signs the test.")
	}
	if len(d.Errors) > 0 {
		return h.render(w, r, http.StatusUnprocessableEntity, "webhook_test", d)
	}
	res, err := h.delivery.Test(r.Context(), s.AccountID, hook.ID, d.Event, delivery.TestOptions{CheckVerification: d.CheckVerification, SignWith: d.SignWith})
	if errors.Is(err, delivery.ErrNoRotation) {
		d.Errors.add("signWith", "No token rotation is under way any more, so there is no next token. Nothing was sent.")
		return h.render(w, r, http.StatusConflict, "webhook_test", d)
	}
	if errors.Is(err, delivery.ErrBusy) {
		d.Errors.add("", "The webhook already has as many requests in flight as it may take. Nothing was sent; try again in a moment.")
		return h.render(w, r, http.StatusTooManyRequests, "webhook_test", d)
	}
	if err != nil {
		return err
	}
	d.Result = &res
	return h.render(w, r, http.StatusOK, "webhook_test", d)
}
