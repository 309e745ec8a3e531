// Package sigcheck owns the reasoning of the portal's signature debugger:
// given a body, the webhook's token (and, for a webhook signing the
// Standard Webhooks way, the webhook-id and webhook-timestamp) and,
// optionally, the signature a receiver computed or saw, it gives the
// signature herald sends over those exact bytes, whether they match, and, when they do not, which mistake
// reproduces the receiver's signature. Causes are computed, never guessed:
// each one names a transformation of the body, the token or the signature
// whose HMAC equals what the receiver has. It imports only the receiver
// package, so its verdicts use the very signing code of a delivery, and
// jsonlimit, so it reads a pasted body within the depth every herald body
// keeps to.
package sigcheck

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"io"
	"slices"
	"strings"

	"github.com/heraldhq/herald/webhook"
)

// Category groups causes into the mistakes a receiver can make.
type Category string

const (
	Reserialised Category = "reserialised" // parsed and written out again
	Encoding     Category = "encoding"     // the bytes went through another character encoding
	Whitespace   Category = "whitespace"   // whitespace trimmed, added, or line endings changed
	WrongToken   Category = "token"        // signed with another key than the webhook's token
	Format       Category = "format"       // the right MAC, written another way
	Algorithm    Category = "algorithm"    // not HMAC-SHA256
)

// Cause is one computed explanation of a mismatch: the transformations
// under which the receiver's signature is reproduced.
type Cause struct {
	Categories []Category
	Summary    string // one sentence: what the receiver did
	Fix        string // what to change
}

// Input is what the debugger was given. Token signs the webhook-signature
// header; Previous lists earlier tokens still worth checking, and Next the
// token a rotation under way moves to, if any.
type Input struct {
	Body      []byte
	Signature string // as the receiver has it; empty: only compute herald's
	Token     string
	Previous  []string
	Next      string
	// Sent is what herald sent for the event the body names, when that
	// event went to this webhook; nil when unknown. It tells a receiver
	// whether the body it pasted is the body it was sent.
	Sent []byte
	// Standard, when not nil, checks a webhook whose signatureScheme is
	// "standard-webhooks": each signature is "v1,<base64>" of the MAC over
	// webhook-id, webhook-timestamp and the body.
	Standard *Standard
}

// Report is the debugger's answer. It never holds a token.
type Report struct {
	Signature string // herald's signature over the exact body
	Standard  bool   // in the Standard Webhooks scheme ("v1,<base64>")
	Given     string // the receiver's signature (or signatures), trimmed
	Checked   bool   // a signature was given
	Match     bool   // it equals herald's, byte for byte
	Causes    []Cause
	Notes     []Note // what the body itself shows, signature or not

	// Of the sent event, when Input.Sent was given:
	Sent          bool
	SentSame      bool   // the pasted body is exactly the sent one
	SentDiffAt    int    // else the offset of the first byte that differs
	SentSignature string // the signature herald sent with it
	MatchesSent   bool   // the receiver's signature is SentSignature
}

// Check computes the report for in.
func Check(in Input) Report {
	r := Report{Signature: in.sign(in.Body), Standard: in.Standard != nil, Given: strings.TrimSpace(in.Signature)}
	tree, err := parseJSON(in.Body)
	parsed := err == nil
	r.Notes = append(notes(in.Body, tree, parsed), standardNotes(in.Standard)...)
	if in.Sent != nil {
		r.Sent, r.SentSame = true, bytes.Equal(in.Sent, in.Body)
		r.SentSignature = in.sign(in.Sent)
		if !r.SentSame {
			r.SentDiffAt = firstDifference(in.Sent, in.Body)
		}
	}
	if r.Given == "" {
		return r
	}
	r.Checked = true
	r.Match = in.matches(r.Given, r.Signature)
	if r.Match {
		return r
	}
	r.MatchesSent = r.Sent && in.matches(r.Given, r.SentSignature)
	if r.MatchesSent {
		return r
	}
	r.Causes = causes(in, tree, parsed, r.Given)
	if len(r.Causes) == 0 && r.Sent && !r.SentSame {
		// The receiver hashed a variant of what it was sent, and the
		// pasted body is another: start from the sent bytes.
		sent := in
		sent.Body = in.Sent
		tree, err := parseJSON(in.Sent)
		r.Causes = causes(sent, tree, err == nil, r.Given)
	}
	return r
}

func firstDifference(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// key is a candidate signing key and how the receiver came to use it.
type key struct {
	bytes []byte
	cause *Cause // nil: the webhook's token as it is
}

// keys lists the token and the ways a receiver commonly ends up with
// another key.
func keys(in Input) []key {
	own := []byte(in.Token)
	if in.Standard != nil {
		own = webhook.StandardSigningKey(in.Token) // the key its whsec_ secret encodes
	}
	out := []key{{bytes: own}}
	add := func(b []byte, summary, fix string) {
		if len(b) == 0 || bytes.Equal(b, own) {
			return
		}
		out = append(out, key{bytes: b, cause: &Cause{Categories: []Category{WrongToken}, Summary: summary, Fix: fix}})
	}
	if in.Standard == nil { // a Standard Webhooks header carries the next token's signature too
		add([]byte(in.Next), "The receiver signs with the token the webhook's rotation moves to, while the webhook-signature header is still signed with the current one.",
			"Until the rotation ends, verify webhook-signature with the current token, or the next token's own header; accept either.")
	}
	for _, p := range in.Previous {
		add([]byte(p), "The receiver signs with the webhook's previous token.",
			"Use the current token (Reveal token on the webhook's page).")
	}
	add([]byte(in.Token+"\n"), "The receiver's token ends with a line break (read from a file or an environment variable with its newline).",
		"Trim the token where it is read.")
	add([]byte(in.Token+"\r\n"), "The receiver's token ends with a Windows line break (CRLF).",
		"Trim the token where it is read.")
	add([]byte(" "+in.Token), "The receiver's token starts with a space.", "Trim the token where it is read.")
	add([]byte(in.Token+" "), "The receiver's token ends with a space.", "Trim the token where it is read.")
	if in.Standard != nil {
		add([]byte(in.Token), "The receiver signs with the secret's text as the key (a Standard Webhooks library given it in its raw format, or an HMAC of its own), while herald signs with the key the whsec_ secret encodes.",
			"Give the library the secret exactly as herald shows it, whsec_ included: it reads what follows whsec_ as base64, as herald does.")
		if rest, ok := strings.CutPrefix(in.Token, "whsec_"); ok {
			add([]byte(rest), "The receiver signs with the secret's base64 text, without its whsec_ prefix, as the key.",
				"Give the library the secret exactly as herald shows it, whsec_ included.")
		}
		return out
	}
	if rest, ok := strings.CutPrefix(in.Token, "whsec_"); ok {
		add([]byte(rest), "The receiver signs with the token without its whsec_ prefix.",
			"Use the whole token, whsec_ included, as the HMAC key.")
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(rest); err == nil {
				add(b, "The receiver Base64-decodes the token before using it as the key (as Standard Webhooks libraries do).",
					"Use the token's text as the key, unchanged: herald's signature is not the Standard Webhooks scheme.")
				break
			}
		}
	}
	return out
}

// causes finds every combination of a body variant and a key whose
// HMAC-SHA256 is the given signature (decoded every way a signature is
// commonly written), then signatures made with another hash. tree is the
// parsed body when parsed.
//
// Each variant is written once into the HMACs of every key together and
// a SHA-256 that tells a variant equal to an earlier one (left out), so
// that memory stays a small multiple of the body whatever the variants'
// size.
func causes(in Input, tree any, parsed bool, given string) []Cause {
	macs, format := decodings(in.givenSignatures(given), in.Standard != nil)
	prefix := in.Standard.prefix()
	ks := keys(in)
	hashes := make([]hash.Hash, len(ks))
	writers := make([]io.Writer, len(ks)+1)
	for i, k := range ks {
		hashes[i] = hmac.New(sha256.New, k.bytes)
		writers[i] = hashes[i]
	}
	digest := sha256.New()
	writers[len(ks)] = digest
	w := bufio.NewWriter(io.MultiWriter(writers...))
	type match struct {
		key, variant int
		cause        Cause
	}
	var matches []match
	seen := map[[sha256.Size]byte]bool{}
	var sum []byte
	for vi, v := range variants(in.Body, tree, parsed) {
		for _, h := range hashes {
			h.Reset()
			h.Write(prefix) // a Standard Webhooks MAC covers id.timestamp. first
		}
		digest.Reset()
		v.write(w)
		w.Flush()
		var d [sha256.Size]byte
		digest.Sum(d[:0])
		if seen[d] {
			continue
		}
		seen[d] = true
		for ki, h := range hashes {
			sum = h.Sum(sum[:0])
			for i, mac := range macs {
				if hmac.Equal(sum, mac) {
					matches = append(matches, match{ki, vi, combine(v.cause, ks[ki].cause, format[i])})
				}
			}
		}
	}
	// Causes come key by key, then variant by variant: the token as it is
	// first, the exact body first.
	slices.SortStableFunc(matches, func(a, b match) int {
		return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.variant, b.variant))
	})
	var out []Cause
	seenCause := map[string]bool{}
	addCause := func(c Cause) {
		if !seenCause[c.Summary] {
			seenCause[c.Summary] = true
			out = append(out, c)
		}
	}
	for _, m := range matches {
		c := m.cause
		if c.Summary == "" {
			// Base64 decoding skips line breaks: the same MAC, other text.
			c = Cause{Categories: []Category{Format}, Summary: "The receiver's signature holds the right HMAC with extra characters (such as line breaks) inside.",
				Fix: "Compare against the header's value exactly, with nothing added."}
		}
		addCause(c)
	}
	if len(out) > 0 {
		return out
	}
	if in.Standard != nil {
		if out = standardCauses(in, macs); len(out) > 0 {
			return out
		}
	}
	for _, alg := range []struct {
		name string
		h    func() hash.Hash
	}{{"HMAC-SHA1", sha1.New}, {"HMAC-SHA512", sha512.New}} {
		m := hmac.New(alg.h, []byte(in.Token))
		m.Write(prefix)
		m.Write(in.Body)
		sum := m.Sum(nil)
		for _, mac := range macs {
			if hmac.Equal(sum, mac) {
				addCause(Cause{Categories: []Category{Algorithm}, Summary: "The receiver computes " + alg.name + ", not HMAC-SHA256.",
					Fix: "Use HMAC with SHA-256, keyed with the token, over the raw body."})
			}
		}
	}
	plain := sha256.Sum256(append(prefix, in.Body...))
	for _, mac := range macs {
		if hmac.Equal(plain[:], mac) {
			addCause(Cause{Categories: []Category{Algorithm}, Summary: "The receiver computes a plain SHA-256 of the body, without the token.",
				Fix: "Use HMAC-SHA256 keyed with the token."})
		}
	}
	return out
}

// combine joins the parts of a cause; nil parts are the exact body, the
// webhook's token, or a signature in herald's own form.
func combine(parts ...*Cause) Cause {
	var c Cause
	var summaries, fixes []string
	for _, p := range parts {
		if p == nil {
			continue
		}
		c.Categories = append(c.Categories, p.Categories...)
		summaries, fixes = append(summaries, p.Summary), append(fixes, p.Fix)
	}
	c.Summary, c.Fix = strings.Join(summaries, " "), strings.Join(fixes, " ")
	return c
}

// decodings reads the given signatures every way one is commonly written:
// standard Base64, Base64 without padding, URL-safe Base64, hex, and each
// after a scheme prefix. The second result says, for each MAC, what
// differed from the form herald's header writes (nil: nothing): bare
// Base64 in herald's scheme, "v1," and Base64 in the Standard Webhooks one.
func decodings(given []string, standard bool) ([][]byte, []*Cause) {
	var macs [][]byte
	var why []*Cause
	add := func(b []byte, c *Cause) {
		for _, m := range macs {
			if bytes.Equal(m, b) {
				return
			}
		}
		macs, why = append(macs, b), append(why, c)
	}
	want := ""
	if standard {
		want = "v1,"
	}
	for _, g := range given {
		for _, p := range []string{"", "sha256=", "v1,", "v1="} {
			s, ok := strings.CutPrefix(g, p)
			if !ok {
				continue
			}
			prefix := ""
			switch {
			case p == want:
			case standard && p == "":
				prefix = "It lacks the v1, in front of each Standard Webhooks signature. "
			case standard:
				prefix = "It carries a " + p + " prefix instead of v1,. "
			default:
				prefix = "It carries a " + p + " prefix, which herald's header does not have. "
			}
			if b, err := base64.StdEncoding.DecodeString(s); err == nil {
				add(b, formatCause(prefix, "", standard))
			}
			if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
				add(b, formatCause(prefix, "It is Base64 without its = padding. ", standard))
			}
			for _, enc := range []*base64.Encoding{base64.URLEncoding, base64.RawURLEncoding} {
				if b, err := enc.DecodeString(s); err == nil {
					add(b, formatCause(prefix, "It is URL-safe Base64 (- and _ instead of + and /). ", standard))
				}
			}
			if b, err := hex.DecodeString(s); err == nil {
				add(b, formatCause(prefix, "It is hexadecimal, not Base64. ", standard))
			}
		}
	}
	return macs, why
}

func formatCause(prefix, how string, standard bool) *Cause {
	if prefix == "" && how == "" {
		return nil
	}
	fix := "Compare against the standard Base64 of the HMAC (with padding), as the webhook-signature header carries it."
	if standard {
		fix = "Compare against v1, followed by the standard Base64 of the HMAC (with padding), as each signature in the webhook-signature header is written."
	}
	return &Cause{Categories: []Category{Format}, Summary: strings.TrimSpace("The receiver computes the right HMAC but writes it differently. " + prefix + how), Fix: fix}
}
