package sigcheck

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/internal/jsonlimit"
	"github.com/heraldhq/herald/webhook"
)

// Header is the category of a Standard Webhooks signature made over
// another webhook-id or webhook-timestamp than the one given, and Scheme
// that of a receiver verifying the other scheme than the webhook's.
const (
	Header Category = "header"
	Scheme Category = "scheme"
)

// Standard is what a Standard Webhooks check needs besides the body: the
// headers the signature was made with, and what herald sent.
type Standard struct {
	ID        string // the webhook-id header: herald sends the event's id
	Timestamp string // the webhook-timestamp header, Unix seconds
	// SentTimestamps are the webhook-timestamp headers herald sent the
	// body's event with, one per attempt, when known.
	SentTimestamps []string
	// Now judges the timestamp's age as a receiver would; zero: not judged.
	Now time.Time
}

// prefix is what a Standard Webhooks MAC covers before the body.
func (s *Standard) prefix() []byte {
	if s == nil {
		return nil
	}
	return []byte(s.ID + "." + s.Timestamp + ".")
}

// sign is herald's signature over body as in's scheme writes it: in the
// Standard Webhooks scheme during a rotation, the header's two signatures,
// the current token's and the next one's, space-separated, as herald
// sends them.
func (in Input) sign(body []byte) string {
	if in.Standard == nil {
		return webhook.Sign(in.Token, body)
	}
	sig := in.Standard.sign(in.Token, body)
	if in.Next != "" {
		sig += " " + in.Standard.sign(in.Next, body)
	}
	return sig
}

func (s *Standard) sign(token string, body []byte) string {
	if priv, ok := webhook.ParsePrivateKey(token); ok {
		// An ed25519 webhook's: its signatures are deterministic, so the
		// one herald sent is made again from the same key and bytes.
		return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(priv, append(s.prefix(), body...)))
	}
	if ts, err := strconv.ParseInt(s.Timestamp, 10, 64); err == nil && strconv.FormatInt(ts, 10) == s.Timestamp {
		return webhook.SignStandard(token, s.ID, ts, body) // the very code that signs a delivery
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(webhook.StandardSigningKey(token), s.prefix(), body))
}

func mac(key []byte, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// matches reports whether the given signature is want. A Standard Webhooks
// header may carry several signatures, space-separated (two during a
// rotation): any one of them equal to any of herald's is a match, as for
// the libraries.
func (in Input) matches(given, want string) bool {
	if in.Standard == nil {
		return hmac.Equal([]byte(given), []byte(want))
	}
	ok := false
	for _, g := range strings.Fields(given) {
		for _, w := range strings.Fields(want) {
			if hmac.Equal([]byte(g), []byte(w)) {
				ok = true
			}
		}
	}
	return ok
}

// givenSignatures splits the given text into the signatures it holds: a
// Standard Webhooks header's space-separated ones, else the whole text.
func (in Input) givenSignatures(given string) []string {
	if in.Standard == nil {
		return []string{given}
	}
	return strings.Fields(given)
}

// standardNotes says what the headers show by themselves: a timestamp a
// receiver would refuse whatever the signature.
func standardNotes(s *Standard) []Note {
	if s == nil || s.Timestamp == "" {
		return nil
	}
	ts, err := strconv.ParseInt(s.Timestamp, 10, 64)
	if err != nil {
		return []Note{{Category: Header, Text: "The webhook-timestamp is not a whole number of seconds; herald sends Unix seconds, and the Standard Webhooks libraries refuse anything else."}}
	}
	var out []Note
	if len(s.Timestamp) >= 13 {
		out = append(out, Note{Category: Header, Text: "The webhook-timestamp looks like milliseconds; herald sends Unix seconds (10 digits)."})
	}
	if s.Now.IsZero() {
		return out
	}
	off := s.Now.Sub(time.Unix(ts, 0))
	if off > webhook.StandardTolerance || off < -webhook.StandardTolerance {
		when := "old"
		if off < 0 {
			off, when = -off, "in the future"
		}
		out = append(out, Note{Category: Header, Text: fmt.Sprintf("The webhook-timestamp is %s %s: a receiver verifying now refuses it whatever the signature, as the Standard Webhooks libraries refuse a timestamp more than 5 minutes from their clock (their replay protection). A delivery checked long after it arrived shows this too.", roughly(off), when)})
	}
	return out
}

// roughly writes a duration as people read an age.
func roughly(d time.Duration) string {
	switch {
	case d < time.Hour:
		return fmt.Sprintf("%d minutes", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d hours", int(d/time.Hour))
	default:
		return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
	}
}

// standardCauses explains a Standard Webhooks signature no body, token or
// form variant reproduces: herald's own scheme, the body's own id as
// webhook-id, or a timestamp herald sent the event with other than the one
// given (a changed timestamp). macs are the given signature's decodings.
func standardCauses(in Input, macs [][]byte) []Cause {
	s := in.Standard
	var out []Cause
	found := func(sum []byte) bool {
		for _, m := range macs {
			if hmac.Equal(sum, m) {
				return true
			}
		}
		return false
	}
	bodies := [][]byte{in.Body}
	if in.Sent != nil {
		bodies = append(bodies, in.Sent)
	}
	for _, b := range bodies {
		if found(mac([]byte(in.Token), b)) || found(mac(webhook.StandardSigningKey(in.Token), b)) { // herald's scheme keys with the token's text
			out = append(out, Cause{Categories: []Category{Scheme}, Summary: "The receiver computes herald's own signature, an HMAC of the body alone, but this webhook signs the Standard Webhooks way: over webhook-id, webhook-timestamp and the body.",
				Fix: "Verify with a Standard Webhooks library, given the secret exactly as herald shows it, or set the webhook's signature scheme to herald."})
			break
		}
	}
	if id := BodyID(in.Body); id != "" && id != s.ID && found(mac(webhook.StandardSigningKey(in.Token), []byte(id+"."+s.Timestamp+"."), in.Body)) {
		out = append(out, Cause{Categories: []Category{Header}, Summary: "The signature is over webhook-id " + id + ", the body's own id, not the webhook-id given here.",
			Fix: "Check with the webhook-id header the request carried: herald sends the event's id."})
	}
	for i, ts := range s.SentTimestamps {
		if ts == s.Timestamp {
			continue
		}
		for _, b := range bodies {
			if found(mac(webhook.StandardSigningKey(in.Token), []byte(s.ID+"."+ts+"."), b)) {
				out = append(out, Cause{Categories: []Category{Header}, Summary: fmt.Sprintf("The signature was made with webhook-timestamp %s, which herald sent with attempt %d of this event; the webhook-timestamp given here is another. A request whose timestamp was changed after signing (a replay) fails verification, as it must.", ts, i+1),
					Fix: "Check with the webhook-timestamp header the request carried, unchanged."})
				return out
			}
		}
	}
	return out
}

// BodyID is the body's top-level id, if it has one: what herald sends as
// webhook-id, so a check may take it when none is given.
func BodyID(body []byte) string {
	var p struct {
		ID string `json:"id"`
	}
	if jsonlimit.Unmarshal(body, &p) != nil {
		return ""
	}
	return p.ID
}
