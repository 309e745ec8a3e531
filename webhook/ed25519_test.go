package webhook_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/webhook"
)

// TestStandardEd25519SignaturesVerify: a "v1a," signature verifies under
// its public key, in its "whpk_" form, beside a "v1," one and during a
// key rotation; a changed body, id or timestamp, another key, a stale
// time or a malformed key is refused with the matching error.
func TestStandardEd25519SignaturesVerify(t *testing.T) {
	seed := func(b byte) ed25519.PrivateKey {
		return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
	}
	key, next := seed(1), seed(2)
	pub := webhook.PublicKeyString(key.Public().(ed25519.PublicKey))
	nextPub := webhook.PublicKeyString(next.Public().(ed25519.PublicKey))
	if !strings.HasPrefix(pub, "whpk_") {
		t.Fatalf("public key %q lacks whpk_", pub)
	}
	if got, ok := webhook.ParsePublicKey(pub); !ok || !got.Equal(key.Public()) {
		t.Fatalf("ParsePublicKey(%q) = %x, %v", pub, got, ok)
	}
	body := []byte(`{"id":"evt","event":"license.created","data":{"name":"Zoë"},"triggeredAt":"2026-11-21T08:07:13.120Z","sequence":1}`)
	now := time.Unix(1795000000, 0)
	sig := webhook.SignStandardEd25519(key, "evt", now.Unix(), body)
	if !strings.HasPrefix(sig, "v1a,") {
		t.Fatalf("signature %q lacks v1a,", sig)
	}
	ts := "1795000000"
	for _, tc := range []struct {
		name         string
		keys         []string
		id, ts, sigs string
		body         []byte
		at           time.Time
		want         error
	}{
		{"as sent", []string{pub}, "evt", ts, sig, body, now, nil},
		{"beside an HMAC signature", []string{pub}, "evt", ts, "v1,c2lnbmF0dXJl " + sig, body, now, nil},
		{"during a rotation, the old key's", []string{pub, nextPub}, "evt", ts, sig, body, now, nil},
		{"during a rotation, the next key's", []string{pub, nextPub}, "evt", ts, webhook.SignStandardEd25519(next, "evt", now.Unix(), body), body, now, nil},
		{"body changed", []string{pub}, "evt", ts, sig, bytes.Replace(body, []byte("Zoë"), []byte("Zoe"), 1), now, webhook.ErrInvalidSignature},
		{"id changed", []string{pub}, "evt2", ts, sig, body, now, webhook.ErrInvalidSignature},
		{"timestamp changed", []string{pub}, "evt", "1795000001", sig, body, now, webhook.ErrInvalidSignature},
		{"another key", []string{nextPub}, "evt", ts, sig, body, now, webhook.ErrInvalidSignature},
		{"as v1", []string{pub}, "evt", ts, "v1," + strings.TrimPrefix(sig, "v1a,"), body, now, webhook.ErrInvalidSignature},
		{"too old", []string{pub}, "evt", ts, sig, body, now.Add(6 * time.Minute), webhook.ErrTimestamp},
		{"no signature", []string{pub}, "evt", ts, "", body, now, webhook.ErrMissingSignature},
		{"no id", []string{pub}, "", ts, sig, body, now, webhook.ErrMissingHeaders},
		{"a secret, not a public key", []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "evt", ts, sig, body, now, webhook.ErrPublicKey},
		{"a short key", []string{"whpk_AAAA"}, "evt", ts, sig, body, now, webhook.ErrPublicKey},
	} {
		if err := webhook.VerifyStandardEd25519(tc.keys, tc.id, tc.ts, tc.sigs, tc.body, tc.at); !errors.Is(err, tc.want) && err != tc.want {
			t.Errorf("%s: %v; want %v", tc.name, err, tc.want)
		}
	}
}

// TestPrivateKeysReadInBothForms: a "whsk_" key reads from its seed and
// from libsodium's 64 bytes alike, gives the public key its signatures
// verify under, and anything else (another prefix, a wrong length, a
// 64-byte key whose halves do not match) is refused.
func TestPrivateKeysReadInBothForms(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	short := webhook.PrivateKeyString(priv)
	long := webhook.PrivateKeyPrefix + base64.StdEncoding.EncodeToString(priv)
	for _, s := range []string{short, long} {
		got, ok := webhook.ParsePrivateKey(s)
		if !ok || !got.Equal(priv) {
			t.Fatalf("ParsePrivateKey(%q) = %v", s, ok)
		}
		pub, ok := webhook.PublicKeyOf(s)
		if !ok {
			t.Fatalf("PublicKeyOf(%q) not ok", s)
		}
		sig := webhook.SignStandardEd25519(got, "msg_1", time.Now().Unix(), []byte("{}"))
		if err := webhook.VerifyStandardEd25519([]string{pub}, "msg_1", strconv.FormatInt(time.Now().Unix(), 10), sig, []byte("{}"), time.Now()); err != nil {
			t.Errorf("a signature by %q does not verify under %q: %v", s, pub, err)
		}
	}
	mismatched := append(append([]byte(nil), priv[:ed25519.SeedSize]...), bytes.Repeat([]byte{1}, ed25519.PublicKeySize)...)
	for _, bad := range []string{"", "whsec_" + short[5:], "whsk_" + base64.StdEncoding.EncodeToString([]byte("short")),
		"whsk_" + base64.StdEncoding.EncodeToString(mismatched), "whsk_not base64"} {
		if _, ok := webhook.ParsePrivateKey(bad); ok {
			t.Errorf("ParsePrivateKey(%q) took it", bad)
		}
		if _, ok := webhook.PublicKeyOf(bad); ok {
			t.Errorf("PublicKeyOf(%q) took it", bad)
		}
	}
}
