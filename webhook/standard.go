package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks (https://www.standardwebhooks.com) signing, which a
// webhook whose signatureScheme is "standard-webhooks" uses instead of
// herald's own: [IDHeader] carries the message id (the event id),
// [TimestampHeader] the attempt's time in Unix seconds, and
// [SignatureHeader] one or more space-separated signatures
// "v1,<base64(HMAC-SHA256(key, id + "." + timestamp + "." + body))>", two
// during a token rotation (the old token's and the next one's).
//
// The secret herald shows for such a webhook is the Standard Webhooks form,
// "whsec_" and the base64 of the key, which every Standard Webhooks library
// takes as it is: the key is the decoded bytes ([StandardKey]). A secret of
// any other form (a herald token from before herald showed this form)
// signs with its own bytes, as it did then.

// TimestampHeader carries a Standard Webhooks delivery's time, in Unix
// seconds.
const TimestampHeader = "webhook-timestamp"

// StandardTolerance is how far a Standard Webhooks timestamp may be from the
// receiver's clock, as the Standard Webhooks libraries allow.
const StandardTolerance = 5 * time.Minute

// Errors returned by [VerifyStandard] besides those of [Verify].
var (
	ErrMissingHeaders = errors.New("webhook: missing webhook-id or webhook-timestamp header")
	ErrTimestamp      = errors.New("webhook: webhook-timestamp is not within 5 minutes of now")
)

// StandardPrefix starts a Standard Webhooks secret.
const StandardPrefix = "whsec_"

// StandardKey returns the key a Standard Webhooks secret stands for: the
// bytes whose standard base64 follows "whsec_", as the Standard Webhooks
// libraries read it. ok is false for a secret of any other form.
func StandardKey(secret string) (key []byte, ok bool) {
	if !strings.HasPrefix(secret, StandardPrefix) || len(secret) == len(StandardPrefix) {
		return nil, false
	}
	rest := secret[len(StandardPrefix):]
	key, err := base64.StdEncoding.Strict().DecodeString(rest)
	if err != nil || len(key) == 0 {
		return nil, false
	}
	return key, true
}

// StandardSecret returns the Standard Webhooks form of a secret whose key
// is token's own bytes: "whsec_" and their base64. A herald token from
// before herald showed the standard form signed with its own bytes; this
// is the secret that verifies it in a Standard Webhooks library.
func StandardSecret(token string) string {
	return StandardPrefix + base64.StdEncoding.EncodeToString([]byte(token))
}

// StandardSigningKey is the key a Standard Webhooks delivery is signed with
// under secret: [StandardKey] of it, or its own bytes for a secret of
// another form.
func StandardSigningKey(secret string) []byte {
	if key, ok := StandardKey(secret); ok {
		return key
	}
	return []byte(secret)
}

// SignStandard returns the Standard Webhooks signature ("v1,<base64>") of
// body sent with id at timestamp (Unix seconds), under token.
func SignStandard(token, id string, timestamp int64, body []byte) string {
	return "v1," + base64.StdEncoding.EncodeToString(standardMAC(token, id, strconv.FormatInt(timestamp, 10), body))
}

func standardMAC(token, id, timestamp string, body []byte) []byte {
	h := hmac.New(sha256.New, StandardSigningKey(token))
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// VerifyStandard checks a Standard Webhooks delivery: its timestamp within
// [StandardTolerance] of now, and any of the signatures in signatures (the
// header's space-separated "v1,…" values) made by any of tokens over id,
// timestamp and body. Every pair is compared in constant time.
func VerifyStandard(tokens []string, id, timestamp, signatures string, body []byte, now time.Time) error {
	if signatures == "" {
		return ErrMissingSignature
	}
	if id == "" || timestamp == "" {
		return ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrTimestamp
	}
	if d := now.Sub(time.Unix(ts, 0)); d > StandardTolerance || d < -StandardTolerance {
		return ErrTimestamp
	}
	matched := false
	for _, sig := range strings.Fields(signatures) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.Strict().DecodeString(value)
		if err != nil {
			continue
		}
		for _, token := range tokens {
			if hmac.Equal(got, standardMAC(token, id, timestamp, body)) {
				matched = true
			}
		}
	}
	if !matched {
		return ErrInvalidSignature
	}
	return nil
}

// IsStandard reports whether h looks like a Standard Webhooks delivery:
// a webhook-timestamp header and a signature of the "v1," form.
func IsStandard(h http.Header) bool {
	return h.Get(TimestampHeader) != "" && strings.HasPrefix(h.Get(SignatureHeader), "v1,")
}

// VerifyRequest checks a delivery's headers and body under any of tokens,
// in whichever scheme it was signed: Standard Webhooks when [IsStandard],
// herald's otherwise.
func VerifyRequest(tokens []string, h http.Header, body []byte, now time.Time) error {
	if IsStandard(h) {
		return VerifyStandard(tokens, h.Get(IDHeader), h.Get(TimestampHeader), h.Get(SignatureHeader), body, now)
	}
	return VerifyAny(tokens, body, h.Get(SignatureHeader))
}
