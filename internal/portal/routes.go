package portal

import "net/http"

// routes lists every URL of the portal. Pages behind sign-in go through
// signedIn, which also checks the CSRF token of every POST; the whole surface
// goes through Go's cross-origin protection and the security headers.
func (h *handler) routes() http.Handler {
	mux := http.NewServeMux()
	public := func(pattern string, fn handlerFunc) { mux.Handle(pattern, h.serve(h.anonymous(fn))) }
	private := func(pattern string, fn sessionFunc) { mux.Handle(pattern, h.serve(h.signedIn(fn))) }

	mux.Handle("GET /static/{file}", h.static)
	public("GET /signin", h.signInPage)
	public("POST /signin", h.signIn)
	public("GET /signin/link", h.portalLinkPage)
	public("POST /signin/link", h.portalLinkSignIn)
	public("GET /invitation", h.invitationPage)
	public("POST /invitation", h.acceptInvitation)
	private("POST /signout", h.signOut)

	private("GET /{$}", h.home)

	private("GET /webhooks", h.webhooks)
	private("GET /webhooks/new", h.newWebhook)
	private("POST /webhooks/new", h.createWebhook)
	private("GET /webhooks/{id}", h.webhook)
	private("POST /webhooks/{id}/token", h.revealToken)
	private("POST /webhooks/{id}/pull-tokens", h.createPullToken)
	private("POST /webhooks/{id}/token/rotate", h.rotateToken)
	private("POST /webhooks/{id}/token/rotate/finish", h.finishRotation)
	private("GET /webhooks/{id}/edit", h.editWebhook)
	private("POST /webhooks/{id}/edit", h.updateWebhook)
	private("POST /webhooks/{id}/enabled", h.setEnabled)
	private("GET /webhooks/{id}/delete", h.confirmDelete)
	private("POST /webhooks/{id}/delete", h.deleteWebhook)
	private("GET /webhooks/{id}/test", h.testPage)
	private("POST /webhooks/{id}/test", h.sendTest)
	private("GET /webhooks/{id}/signature", h.signaturePage)
	private("POST /webhooks/{id}/signature", h.checkSignature)

	private("GET /events", h.events)
	private("POST /webhooks/{id}/recover", h.recoverWebhook)

	private("GET /webhook-event-logs", h.logs)
	private("GET /webhook-event-logs/{id}", h.eventLog)
	private("POST /webhook-event-logs/{id}/resend", h.resend)
	private("POST /webhook-event-logs/{id}/skip", h.skip)

	private("GET /account", h.account)
	private("POST /account", h.saveAccount)
	private("GET /account/api-tokens", h.apiTokens)
	private("POST /account/api-tokens", h.createAPIToken)
	private("POST /account/api-tokens/{id}/revoke", h.revokeAPIToken)
	private("GET /account/password", h.passwordPage)
	private("POST /account/password", h.changePassword)
	private("GET /account/members", h.members)
	private("POST /account/members", h.invite)
	private("POST /account/members/{id}/role", h.setRole)
	private("POST /account/members/{id}/remove", h.removeUser)
	private("POST /account/invitations/{id}/revoke", h.revokeInvitation)

	private("/", h.notFound)

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(h.serve(func(w http.ResponseWriter, r *http.Request) error {
		return &httpError{Code: http.StatusForbidden, Msg: "This form came from another site, so it was refused."}
	}))
	return h.headers(cop.Handler(mux))
}
