package portal

import (
	"net/http"
	"net/url"
)

// restorable are the form fields kept across a sign-in when a session ends
// before a form is sent: what a person types that is no secret. Tokens and
// passwords are never kept; the portal's own hidden fields are made anew.
var restorable = map[string]bool{
	"name": true, "url": true, "events": true, "enabled": true,
	"notificationEmail": true, "scope": true, "expires": true,
	"event": true, "checkVerification": true, "signWith": true, "overlap": true,
}

const (
	sessionEndedNotice = "Your session ended; sign in to continue."
	keptNotice         = "Your session ended before this form was sent, so nothing was changed. What you typed is back: check it and send it again."
	notKeptNotice      = "Your session ended before this form was sent, so nothing was done. Do it again if you still want to."
)

// sessionEnded answers a form posted after its session ended: to sign-in
// with the reason, then back to the page the form was on (a local path
// only), with what was typed there, except secrets. The form itself is not
// acted on: its page shows it again to be sent knowingly.
func (h *handler) sessionEnded(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return formError(err)
	}
	page := localPath(r.PostForm.Get("page"), "/webhooks")
	kept := url.Values{}
	for k, vs := range r.PostForm {
		// The webhook form's checkbox sends "on"; the Enable and Disable
		// buttons' "true" and "false" are an action, not typing.
		if restorable[k] && (k != "enabled" || r.PostForm.Get(k) == "on") {
			kept[k] = append([]string(nil), vs...)
		}
	}
	back := flash{Notice: notKeptNotice}
	if len(kept) > 0 {
		back = flash{Notice: keptNotice, Form: kept}
	}
	secret := h.signInToken(w, r)
	if err := h.addFlash(r.Context(), secret, pagePath(page), back); err != nil {
		return err
	}
	if err := h.addFlash(r.Context(), secret, "/signin", flash{Notice: sessionEndedNotice}); err != nil {
		return err
	}
	return redirect(w, r, withQuery("/signin", "next", page))
}
