package portal

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/internal/sigcheck"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/validator"
	"github.com/heraldhq/herald/webhook"
)

// maxSignatureForm bounds the signature debugger's form: a body pasted
// into it arrives percent-encoded, up to three times its size (nine bytes
// for each three-byte character), and herald's bodies reach a few tens of
// KiB (metadata alone may be 16 KiB).
const maxSignatureForm = 512 << 10

// maxSignatureLength bounds the signature field: HMAC-SHA256 in any common
// form (hex, with a prefix) is under 100 characters.
const maxSignatureLength = 512

// maxStandardID bounds the webhook-id field: herald sends a UUID, and
// other senders' message ids are short too.
const maxStandardID = 256

// checkWait is how long a check waits for one of the process's check
// slots before it is refused, as a Test is when its webhook has no slot.
const checkWait = 5 * time.Second

// Line endings and encodings a pasted body is read with.
const (
	lineLF    = "lf"
	lineCRLF  = "crlf"
	bodyText  = "text"
	bodyB64   = "base64"
	bodyField = "body"
)

type signatureData struct {
	Webhook   store.Webhook
	Body      string // as typed, for the form
	Signature string
	// Of a webhook signing the Standard Webhooks way: the webhook-id and
	// webhook-timestamp headers the signature was made with.
	StandardID  string
	Timestamp   string
	LineEndings string
	Encoding    string
	Errors      fieldErrors
	Bytes       int // the length of the body checked
	Report      *sigcheck.Report
	SentLog     *store.EventLog // the log of the event the body names, if it went to this webhook
}

// signaturePage shows the signature debugger: paste a body and, if one is
// at hand, the signature a receiver computed or saw.
func (h *handler) signaturePage(w http.ResponseWriter, r *http.Request, s store.Session) error {
	hook, err := h.store.Webhook(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	d := signatureData{Webhook: hook, LineEndings: lineLF, Encoding: bodyText}
	// From an event log: its exact payload, to compare with what the
	// receiver computed. A log of another webhook is not this page's.
	if id := r.URL.Query().Get("log"); id != "" {
		l, err := h.store.Log(r.Context(), s.AccountID, id)
		if err != nil {
			return err
		}
		if l.WebhookID != hook.ID {
			return store.ErrNotFound
		}
		d.Body = string(l.Payload)
		if hook.SignatureScheme != store.SchemeHerald {
			// The headers the latest attempt was signed with, when kept.
			d.StandardID = l.EventID
			if ts := sentTimestamps(l); len(ts) > 0 {
				d.Timestamp = ts[len(ts)-1]
			}
		}
	}
	return h.render(w, r, http.StatusOK, "webhook_signature", d)
}

// checkSignature computes the signature herald sends for this webhook's
// token over the pasted bytes and, given the receiver's, what explains a
// difference. Nothing is stored or sent; the token is never shown.
func (h *handler) checkSignature(w http.ResponseWriter, r *http.Request, s store.Session) error {
	hook, err := h.store.Webhook(r.Context(), s.AccountID, r.PathValue("id"))
	if err != nil {
		return err
	}
	f := r.PostForm
	d := signatureData{Webhook: hook, Body: f.Get(bodyField), Signature: f.Get("signature"),
		StandardID: f.Get("webhookId"), Timestamp: f.Get("timestamp"),
		LineEndings: f.Get("lineEndings"), Encoding: f.Get("encoding")}
	body, ok := d.read()
	if !ok {
		return h.render(w, r, http.StatusUnprocessableEntity, "webhook_signature", d)
	}
	select {
	case h.checking <- struct{}{}:
		defer func() { <-h.checking }()
	case <-time.After(checkWait):
		w.Header().Set("Retry-After", "5")
		d.Errors.add("", "Too many signature checks are running on this server. Nothing was checked; try again in a moment.")
		return h.render(w, r, http.StatusTooManyRequests, "webhook_signature", d)
	case <-r.Context().Done():
		return r.Context().Err()
	}
	// During a rotation the header is signed with the current token; a
	// receiver already on the next one is told so.
	tokens, err := h.store.WebhookTokens(r.Context(), s.AccountID, hook.ID)
	if err != nil {
		return fmt.Errorf("signature check: %w", err)
	}
	in := sigcheck.Input{Body: body, Signature: d.Signature, Token: tokens.Current, Next: tokens.Next}
	if d.SentLog, err = h.sentLog(r, s, hook.ID, body); err != nil {
		return err
	}
	if d.SentLog != nil {
		in.Sent = d.SentLog.Payload
	}
	if hook.SignatureScheme != store.SchemeHerald {
		std := &sigcheck.Standard{ID: cmp.Or(strings.TrimSpace(d.StandardID), sigcheck.BodyID(body)), Timestamp: strings.TrimSpace(d.Timestamp), Now: h.now()}
		d.StandardID, d.Timestamp = std.ID, std.Timestamp
		if d.SentLog != nil {
			// Its attempts, for the timestamps each was signed with.
			l, err := h.store.Log(r.Context(), s.AccountID, d.SentLog.ID)
			if err != nil {
				return fmt.Errorf("signature check: %w", err)
			}
			std.SentTimestamps = sentTimestamps(l)
		}
		in.Standard = std
	}
	rep := sigcheck.Check(in)
	d.Report, d.Bytes = &rep, len(body)
	return h.render(w, r, http.StatusOK, "webhook_signature", d)
}

// sentLog finds the log of the event whose id the pasted body carries, when
// that event went to this webhook, so the check can say whether the body is
// what herald sent. A body that names no such event finds nothing, and so
// does one nested deeper than any herald body.
func (h *handler) sentLog(r *http.Request, s store.Session, webhookID string, body []byte) (*store.EventLog, error) {
	var p struct {
		ID string `json:"id"`
	}
	if jsonlimit.Unmarshal(body, &p) != nil {
		return nil, nil
	}
	if u, err := uuid.Parse(p.ID); err != nil || len(p.ID) != 36 || u.String() != strings.ToLower(p.ID) {
		return nil, nil
	}
	logs, _, err := h.store.Logs(r.Context(), s.AccountID, store.LogFilter{WebhookID: webhookID, EventID: strings.ToLower(p.ID), Page: store.Page{Limit: 1}})
	if err != nil || len(logs) == 0 {
		return nil, err
	}
	return &logs[0], nil
}

// sentTimestamps are the webhook-timestamp headers of a log's attempts,
// oldest first, as far as their headers were kept.
func sentTimestamps(l store.EventLog) []string {
	var out []string
	for _, a := range l.Attempts {
		if a.Headers == nil {
			continue
		}
		for _, hd := range a.Headers.Request {
			if strings.EqualFold(hd.Name, webhook.TimestampHeader) {
				out = append(out, hd.Value)
			}
		}
	}
	return out
}

// read turns the form into the exact bytes to check, recording what is
// wrong with each field. A browser sends a text box's every line break as
// CRLF whatever was pasted; herald's bodies hold no raw line break, so the
// owner says which ending the receiver's copy had (LF by default).
func (d *signatureData) read() ([]byte, bool) {
	if d.LineEndings != lineCRLF {
		if d.LineEndings != "" && d.LineEndings != lineLF {
			d.Errors.add("lineEndings", "Line endings must be LF or CRLF.")
		}
		d.LineEndings = lineLF
	}
	if d.Encoding != bodyB64 {
		if d.Encoding != "" && d.Encoding != bodyText {
			d.Errors.add("encoding", "Body format must be text or Base64.")
		}
		d.Encoding = bodyText
	}
	if d.Webhook.SignatureScheme != store.SchemeHerald {
		d.readStandard()
	}
	if len(d.Signature) > maxSignatureLength {
		d.Errors.add("signature", fmt.Sprintf("Signature must be at most %d characters.", maxSignatureLength))
	} else if msg := validator.SingleLine(strings.TrimSpace(d.Signature)); msg != "" {
		d.Errors.add("signature", "Signature "+msg+".")
	}
	var body []byte
	switch {
	case d.Body == "":
		d.Errors.add(bodyField, "Body must not be empty: paste the exact body the receiver got.")
	case d.Encoding == bodyB64:
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(d.Body), ""))
		if err != nil {
			d.Errors.add(bodyField, "Body is not valid Base64. Choose “Text” to paste the body as it reads.")
		}
		body = b
	default:
		body = []byte(strings.ReplaceAll(d.Body, "\r\n", "\n"))
		if d.LineEndings == lineCRLF {
			body = bytes.ReplaceAll(body, []byte("\n"), []byte("\r\n"))
		}
	}
	if d.Webhook.SignatureScheme != store.SchemeHerald && len(d.Errors) == 0 && strings.TrimSpace(d.StandardID) == "" && sigcheck.BodyID(body) == "" {
		d.Errors.add("webhookId", "webhook-id must not be empty when the body has no id: paste the webhook-id header the request carried.")
	}
	return body, len(d.Errors) == 0
}

// readStandard checks the Standard Webhooks headers, in the order the form
// shows them: webhook-id (empty: the body's id, which herald sends) and
// webhook-timestamp, Unix seconds as herald writes them.
func (d *signatureData) readStandard() {
	id, ts := strings.TrimSpace(d.StandardID), strings.TrimSpace(d.Timestamp)
	if len(id) > maxStandardID {
		d.Errors.add("webhookId", fmt.Sprintf("webhook-id must be at most %d characters.", maxStandardID))
	} else if msg := validator.SingleLine(id); msg != "" {
		d.Errors.add("webhookId", "webhook-id "+msg+".")
	}
	switch n, err := strconv.ParseInt(ts, 10, 64); {
	case ts == "":
		d.Errors.add("timestamp", "webhook-timestamp must not be empty: paste the webhook-timestamp header the request carried (Unix seconds, such as 1795000000).")
	case err != nil || n < 0 || strconv.FormatInt(n, 10) != ts:
		d.Errors.add("timestamp", "webhook-timestamp must be the header's value, a whole number of seconds such as 1795000000.")
	}
}
