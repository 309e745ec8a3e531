package webhook_test

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/heraldhq/herald/webhook"
)

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	signature := webhook.Sign(token, body) // ends in "FqU="
	mac, _ := base64.StdEncoding.DecodeString(signature)
	for name, tc := range map[string]struct {
		token, signature string
		body             []byte
		want             error
	}{
		"no signature":   {token, "", body, webhook.ErrMissingSignature},
		"another token":  {"whsec_another", signature, body, webhook.ErrInvalidSignature},
		"another body":   {token, signature, body[1:], webhook.ErrInvalidSignature},
		"not base64":     {token, "not a signature!", body, webhook.ErrInvalidSignature},
		"the MAC in hex": {token, hex.EncodeToString(mac), body, webhook.ErrInvalidSignature},
		"no padding":     {token, signature[:len(signature)-1], body, webhook.ErrInvalidSignature},
		// The same 32 bytes in a non-canonical spelling: the unused low
		// bits of the last character set. Receivers that compare the
		// base64 text reject it, and so does Verify.
		"non-canonical": {token, signature[:len(signature)-2] + "V=", body, webhook.ErrInvalidSignature},
		"truncated":     {token, signature[:len(signature)-4], body, webhook.ErrInvalidSignature},
		"doubled":       {token, signature + signature, body, webhook.ErrInvalidSignature},
		// A base64 decoder, even a strict one, skips line breaks.
		"a line break inside": {token, signature[:20] + "\r\n" + signature[20:], body, webhook.ErrInvalidSignature},
		"a trailing newline":  {token, signature + "\n", body, webhook.ErrInvalidSignature},
	} {
		if err := webhook.Verify(tc.token, tc.body, tc.signature); !errors.Is(err, tc.want) {
			t.Errorf("%s: Verify = %v; want %v", name, err, tc.want)
		}
	}
	if err := webhook.Verify(token, body, signature); err != nil {
		t.Errorf("Verify of Sign's own signature = %v; want nil", err)
	}
}
