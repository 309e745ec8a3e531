// Package webhook signs and verifies herald deliveries.
//
// A herald delivery is an HTTP POST whose body is a UTF-8 JSON document and
// whose webhook-signature header carries
//
//	base64(HMAC-SHA256(key = the webhook's token, message = the raw body bytes))
//
// Receivers must verify over the body exactly as it arrived, before any JSON
// parsing: re-serialising parsed JSON changes key order, whitespace and escapes,
// and so the bytes. [Verify] does the comparison in constant time, and
// [Middleware] does the whole job for a net/http receiver; while the
// webhook's token is being rotated, [VerifyAny] and [MiddlewareAny] accept
// either token. [Parse] then
// decodes the verified body into a [Payload].
//
// Delivery is at least once: a timed-out or failed attempt is retried, and an
// event log can be resent by hand. Every attempt carries the same body, so
// de-duplicate on [Payload.ID], answer 2xx quickly (herald waits 15 seconds per
// attempt) and do slow work after answering.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// SignatureHeader is the header that carries a delivery's signature. Header
// names are case-insensitive; read it with http.Header.Get, which does not
// assume a casing.
const SignatureHeader = "webhook-signature"

// NextSignatureHeader carries, while the webhook's token is being rotated,
// the signature of the body under the next token, computed like the one in
// [SignatureHeader]. That header keeps its meaning (the signature under the
// token the webhook signs with now) and changes to the next token when the
// rotation ends; a receiver that holds both tokens (see [VerifyAny]) needs
// to read only [SignatureHeader].
const NextSignatureHeader = "webhook-signature-next"

// IDHeader carries the event id (the payload's id) so that a receiver can
// de-duplicate before reading the body.
const IDHeader = "webhook-id"

// Errors returned by [Verify].
var (
	ErrMissingSignature = errors.New("webhook: missing webhook-signature header")
	ErrInvalidSignature = errors.New("webhook: signature does not match the body")
)

// Sign returns the signature herald sends for body under token.
func Sign(token string, body []byte) string {
	return base64.StdEncoding.EncodeToString(mac(token, body))
}

// Verify reports whether signature is the signature of body under token. The
// signature is decoded and compared with hmac.Equal, which checks the lengths
// first and then compares in constant time, so a mismatch reveals nothing of
// where it differs. Decoding is strict: exactly the text [Sign] returns is
// accepted, as by a receiver that compares the base64 strings.
func Verify(token string, body []byte, signature string) error {
	if signature == "" {
		return ErrMissingSignature
	}
	// Even a strict base64 decoder skips CR and LF anywhere in its input, so
	// refuse them first: only the text Sign returns may pass.
	if strings.ContainsAny(signature, "\r\n") {
		return ErrInvalidSignature
	}
	got, err := base64.StdEncoding.Strict().DecodeString(signature)
	if err != nil {
		return ErrInvalidSignature
	}
	if !hmac.Equal(got, mac(token, body)) {
		return ErrInvalidSignature
	}
	return nil
}

// VerifyAny reports whether signature is the signature of body under any of
// tokens. A receiver holds two tokens while the webhook's token is being
// rotated: the old one, which signs [SignatureHeader] until the rotation
// ends, and the next one, which signs it from then on. Every token is
// compared, in constant time, whichever matches, so the time taken does not
// tell which one did.
func VerifyAny(tokens []string, body []byte, signature string) error {
	if signature == "" {
		return ErrMissingSignature
	}
	matched := false
	for _, token := range tokens {
		if Verify(token, body, signature) == nil {
			matched = true
		}
	}
	if !matched {
		return ErrInvalidSignature
	}
	return nil
}

func mac(token string, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(token))
	h.Write(body)
	return h.Sum(nil)
}
