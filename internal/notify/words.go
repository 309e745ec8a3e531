package notify

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// Words returns an email's subject and body: written from its facts (a
// warning about a webhook's health, queued by the store in the transaction
// that decided it), with links to the portal at publicURL ("" when herald
// does not know its address); or, for an email queued before herald kept
// facts, the words it was queued with.
func Words(e store.Email, publicURL string) (subject, body string) {
	if e.Facts == nil {
		return e.Subject, e.Body
	}
	w := words{publicURL: strings.TrimRight(publicURL, "/")}
	switch e.Kind {
	case store.EmailUnhealthy:
		return w.unhealthy(*e.Facts)
	case store.EmailSuspended:
		return w.suspended(*e.Facts)
	case store.EmailReminder:
		return w.reminder(*e.Facts)
	case store.EmailDisabled:
		return w.disabled(*e.Facts)
	case store.EmailCertificateExpiring:
		return w.certificateExpiring(*e.Facts)
	}
	return e.Subject, e.Body
}

type words struct{ publicURL string }

// The emails. Plain text, short lines; each names the webhook, says what its
// state means and what to do, and links to its page in the portal.

func (w words) unhealthy(c store.EmailFacts) (string, string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Your webhook %q is now Unhealthy: an event failed after every retry.\n\n", c.Name)
	writeHook(&b, c.WebhookID, c.URL)
	writeFailure(&b, c.Failure)
	left := c.SuspendAfter - c.Streak
	fmt.Fprintf(&b, `
Herald keeps sending new events to it. If %d more %s after all retries,
with none delivered in between, herald suspends the webhook and stops
sending to it.

What to do: fix the receiving endpoint, then check it with Test on the
webhook's page. The next successful delivery makes it Healthy again.

`, left, plural(left, "event fails", "events fail"))
	w.writeLink(&b, c.WebhookID)
	return fmt.Sprintf("Webhook %q is Unhealthy", c.Name), b.String()
}

func (w words) suspended(c store.EmailFacts) (string, string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Your webhook %q has been suspended.\n\n", c.Name)
	writeHook(&b, c.WebhookID, c.URL)
	writeFailure(&b, c.Failure)
	fmt.Fprintf(&b, `
Its %d most recent completed events all failed after every retry, so herald
has stopped sending to it. Events that fire meanwhile are still recorded in
its event log, as cancelled, so that they can be resent.

To restore it: fix the receiving endpoint, check it with Test on the
webhook's page (a successful Test does not lift the suspension), then
resend the events it missed from that page, or from the command line with
herald webhooks recover %s --since 7d (--dry-run counts them first; or
one at a time with POST /v3/webhook-event-logs/{id}/resend). The first successful delivery
makes the webhook Healthy again.

`, c.SuspendAfter, c.WebhookID)
	w.writeLink(&b, c.WebhookID)
	return fmt.Sprintf("Webhook %q suspended", c.Name), b.String()
}

func (w words) disabled(c store.EmailFacts) (string, string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Your webhook %q has been disabled by herald.\n\n", c.Name)
	writeHook(&b, c.WebhookID, c.URL)
	fmt.Fprintf(&b, `
Why: %s.

Herald sends nothing to it while it is disabled. Events that fire
meanwhile are still recorded in its event log, as cancelled, so that they
can be resent.

To restore it: make sure the endpoint accepts deliveries again, check it
with Test on the webhook's page, enable the webhook there (or PATCH
/v3/webhooks/{id} with "enabled": true), then resend the events it missed.

`, c.Reason)
	w.writeLink(&b, c.WebhookID)
	return fmt.Sprintf("Webhook %q disabled: its receiver answered 410 Gone", c.Name), b.String()
}

func (w words) certificateExpiring(c store.EmailFacts) (string, string) {
	var b strings.Builder
	fmt.Fprintf(&b, "The client certificate of your webhook %q expires on %s.\n\n", c.Name, c.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC"))
	writeHook(&b, c.WebhookID, c.URL)
	fmt.Fprint(&b, `
Herald presents this certificate to the receiver for mutual TLS. Once it
has expired, the receiver refuses the connection and deliveries fail.

What to do: get a new certificate for this client from whoever runs the
receiver, then save it with its key on the webhook's page (or PATCH
/v3/webhooks/{id} with "tls"). Check it with Test.

`)
	w.writeLink(&b, c.WebhookID)
	return fmt.Sprintf("Webhook %q: client certificate expires %s", c.Name, c.ExpiresAt.UTC().Format("2006-01-02")), b.String()
}

func (w words) reminder(r store.EmailFacts) (string, string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Your webhook %q is still suspended, since %s.\n\n", r.Name, r.Since.UTC().Format("2006-01-02 15:04 UTC"))
	writeHook(&b, r.WebhookID, r.URL)
	writeFailure(&b, r.Failure)
	fmt.Fprintf(&b, `
Herald sends it nothing while it is suspended; the events that fire are
recorded in its event log, as cancelled, so that they can be resent.

To restore it: fix the receiving endpoint, check it with Test on the
webhook's page, then resend the events it missed from that page (or with
herald webhooks recover %s --since and a time a little before the
suspension). The first successful delivery makes it Healthy again. If it
is no longer needed, disable or delete it, and these reminders stop.

This reminder comes every %s while the webhook stays suspended.

`, r.WebhookID, formatPeriod(r.Every))
	w.writeLink(&b, r.WebhookID)
	return fmt.Sprintf("Webhook %q is still suspended", r.Name), b.String()
}

// writeHook names the webhook and its receiver's origin only: a receiver's
// path or query may carry its own secret (as chat services' incoming-webhook
// URLs do), and an email travels and is kept where the API's answers are not.
func writeHook(b *strings.Builder, id, rawURL string) {
	origin := rawURL
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		origin = u.Scheme + "://" + u.Host
	}
	fmt.Fprintf(b, "Webhook id:          %s\nSends to (origin):   %s\n", id, origin)
}

func writeFailure(b *strings.Builder, f *event.Failure) {
	if f == nil {
		return
	}
	answer := "no answer"
	if f.StatusCode != nil {
		answer = fmt.Sprintf("HTTP %d", *f.StatusCode)
	}
	fmt.Fprintf(b, `
Latest failed event: %s (event id %s)
Event log:           %s
Failed at:           %s
Receiver's answer:   %s
Reason:              %s
`, f.Event, f.EventID, f.LogID, f.FailedAt, answer, f.Reason)
}

// writeLink names the webhook's portal page. Without --public-url herald
// does not know the address its users reach it at (its listening address is
// often a private one behind a proxy), so it names the page's path rather
// than invent a host.
func (w words) writeLink(b *strings.Builder, webhookID string) {
	path := "/webhooks/" + webhookID
	if w.publicURL != "" {
		fmt.Fprintf(b, "The webhook's page: %s%s\n", w.publicURL, path)
		return
	}
	fmt.Fprintf(b, "The webhook's page: %s in herald's portal (Developer -> Webhooks).\n(The portal's address is not configured: herald's operator can set --public-url.)\n", path)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// formatPeriod writes a reminder period as people say it: "7 days", "12h0m0s".
func formatPeriod(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		days := int(d / (24 * time.Hour))
		return fmt.Sprintf("%d %s", days, plural(days, "day", "days"))
	}
	return d.String()
}
