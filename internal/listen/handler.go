package listen

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/webhook"
)

// Handler returns the receiving handler. For every request it reads the raw
// body (at most webhook.MaxBodyBytes), verifies it under cfg.Token with
// webhook.Verify (webhook.VerifyStandard for a Standard Webhooks delivery:
// webhook-timestamp and a v1 signature) and prints it to cfg.Out: a line with the time, the event
// kind, the event id and the verdict, then the body pretty-printed (as sent
// when it is nested deeper than jsonlimit.MaxDepth, or indenting would make
// it many times larger).
//
// A verified request is answered 200 {"received":true}; with cfg.Forward it
// is passed on to the app instead, and the app's answer is relayed (502 when
// the forward fails). An unverified request is answered 401 and is never
// forwarded.
func Handler(cfg Config) http.Handler {
	return &handler{cfg: cfg.withDefaults()}
}

// maxIndentGrowth is how many times its size a body may grow when
// indented and still be printed so. Herald's bodies grow by a fifth or so;
// a body built to grow (many small values deep down: "0," becomes a line
// of up to 128 spaces) is printed as sent.
const maxIndentGrowth = 8

type handler struct {
	cfg Config
	mu  sync.Mutex // keeps each printed delivery in one piece
}

// answer is the JSON body of the answers that are not relayed from the app.
type answer struct {
	Received bool   `json:"received,omitempty"`
	Error    string `json:"error,omitempty"`
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, webhook.MaxBodyBytes))
	if err != nil {
		status, problem := http.StatusBadRequest, "cannot read the body: "+err.Error()
		if tooLarge := new(http.MaxBytesError); errors.As(err, &tooLarge) {
			status, problem = http.StatusRequestEntityTooLarge, "body larger than 1 MiB"
		}
		h.print(at, r, nil, problem, "")
		reply(w, status, answer{Error: problem})
		return
	}

	if problem := h.verify(r, body); problem != "" {
		note := ""
		if h.cfg.Forward != "" {
			note = "not forwarded"
		}
		h.print(at, r, body, problem, note)
		reply(w, http.StatusUnauthorized, answer{Error: problem})
		return
	}

	if h.cfg.Forward == "" {
		h.print(at, r, body, "", "")
		reply(w, http.StatusOK, answer{Received: true})
		return
	}
	h.print(at, r, body, "", h.forward(w, r, body))
}

// verify returns why the request fails verification, or "" when it passes.
func (h *handler) verify(r *http.Request, body []byte) (problem string) {
	if h.cfg.Token == "" {
		return "no token configured"
	}
	signature := r.Header.Get(webhook.SignatureHeader)
	tokens, under := []string{h.cfg.Token}, "this token"
	if h.cfg.NextToken != "" {
		tokens, under = append(tokens, h.cfg.NextToken), "either token"
	}
	if pubs := publicKeys(tokens); pubs != nil {
		// An ed25519 webhook (standard-webhooks-ed25519): its whpk_ public
		// key, or the whsk_ private key it is derived from.
		switch err := webhook.VerifyStandardEd25519(pubs, r.Header.Get(webhook.IDHeader), r.Header.Get(webhook.TimestampHeader),
			signature, body, time.Now()); {
		case err == nil:
			return ""
		case errors.Is(err, webhook.ErrMissingSignature):
			return "no webhook-signature header"
		case errors.Is(err, webhook.ErrTimestamp):
			return "webhook-timestamp is not within 5 minutes of now (Standard Webhooks)"
		case errors.Is(err, webhook.ErrMissingHeaders):
			return "no webhook-id or webhook-timestamp header (Standard Webhooks)"
		}
		return "no v1a signature verifies webhook-id.webhook-timestamp.body under " + strings.Replace(under, "token", "public key", 1) + " (Standard Webhooks, ed25519)"
	}
	if webhook.IsStandard(r.Header) {
		// A webhook whose signatureScheme is standard-webhooks.
		switch err := webhook.VerifyStandard(tokens, r.Header.Get(webhook.IDHeader), r.Header.Get(webhook.TimestampHeader),
			signature, body, time.Now()); {
		case err == nil:
			return ""
		case errors.Is(err, webhook.ErrTimestamp):
			return "webhook-timestamp is not within 5 minutes of now (Standard Webhooks)"
		case errors.Is(err, webhook.ErrMissingHeaders):
			return "no webhook-id header (Standard Webhooks)"
		}
		return "no v1 signature matches webhook-id.webhook-timestamp.body under " + under + " (Standard Webhooks)"
	}
	err := webhook.VerifyAny(tokens, body, signature)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, webhook.ErrMissingSignature):
		return "no webhook-signature header"
	}
	if _, err := base64.StdEncoding.Strict().DecodeString(signature); err != nil {
		return "webhook-signature is not base64"
	}
	return "signature does not match the body under " + under
}

// print writes one delivery to cfg.Out: the header line, the body
// pretty-printed, and a note about forwarding when there is one. An empty
// problem means verified.
func (h *handler) print(at time.Time, r *http.Request, body []byte, problem, note string) {
	event, id := "?", cmp.Or(r.Header.Get(webhook.IDHeader), "?")
	if p, err := webhook.Parse(body); err == nil {
		event, id = p.Event, p.ID
	}
	verdict := "verified"
	if problem != "" {
		verdict = "NOT VERIFIED (" + problem + ")"
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "%s  %s  %s  %s\n", at.Format("15:04:05.000"), event, id, verdict)
	switch {
	case len(body) == 0:
		b.WriteString("(empty body)")
	// Indenting costs every line two bytes per level, and anyone may post
	// to listen: a body whose indented form would dwarf it is printed as
	// sent, as is one nested deeper than herald's bodies.
	case jsonlimit.Check(body) != nil, indentedSize(body) > maxIndentGrowth*len(body):
		b.Write(body)
	// json.Indent copies string literals as they are, so non-ASCII text
	// prints as the UTF-8 that was sent; on an error it writes nothing.
	case json.Indent(&b, body, "", "  ") != nil:
		b.Write(body)
	}
	b.WriteString("\n")
	if note != "" {
		b.WriteString(note + "\n")
	}
	b.WriteString("\n")

	h.mu.Lock()
	defer h.mu.Unlock()
	h.cfg.Out.Write(b.Bytes()) // a failed print has nowhere better to go
}

func reply(w http.ResponseWriter, status int, a answer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(a) // fails only when the sender has gone
}

// indentedSize returns at most how long body is once json.Indent has
// indented it by two spaces: each bracket or comma outside strings may
// start a line indented two spaces per level, and each colon gains a space.
// It reads each byte once and allocates nothing.
func indentedSize(body []byte) int {
	size := len(body)
	jsonlimit.Structure(body, func(c byte, depth int) bool {
		switch c {
		case ':':
			size++
		case ']', '}', '[', '{', ',':
			size += 1 + 2*depth
		}
		return true
	})
	return size
}

// publicKeys returns the ed25519 public keys the tokens given are, or are
// the private halves of; nil when none is a key (an HMAC webhook's).
func publicKeys(tokens []string) []string {
	var pubs []string
	for _, t := range tokens {
		if _, ok := webhook.ParsePublicKey(t); ok {
			pubs = append(pubs, t)
		} else if pub, ok := webhook.PublicKeyOf(t); ok {
			pubs = append(pubs, pub)
		}
	}
	return pubs
}
