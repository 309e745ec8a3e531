package webhook

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks' asymmetric signatures: "v1a,<base64(ed25519
// signature of id + "." + timestamp + "." + body)>" in [SignatureHeader],
// with [IDHeader] and [TimestampHeader] as for "v1,". A receiver verifies
// them with the sender's public key, "whpk_" and the standard base64 of
// its 32 bytes, and needs no secret.

// PublicKeyPrefix starts a Standard Webhooks public key.
const PublicKeyPrefix = "whpk_"

// ErrPublicKey is returned when no public key given to
// [VerifyStandardEd25519] is a "whpk_" key of 32 bytes.
var ErrPublicKey = errors.New("webhook: no valid whpk_ public key")

// PublicKeyString returns the Standard Webhooks form of an ed25519 public
// key: "whpk_" and the standard base64 of its bytes.
func PublicKeyString(pub ed25519.PublicKey) string {
	return PublicKeyPrefix + base64.StdEncoding.EncodeToString(pub)
}

// ParsePublicKey reads a public key in the Standard Webhooks form. ok is
// false for anything but "whpk_" and the standard base64 of 32 bytes.
func ParsePublicKey(s string) (pub ed25519.PublicKey, ok bool) {
	if !strings.HasPrefix(s, PublicKeyPrefix) {
		return nil, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s[len(PublicKeyPrefix):])
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, false
	}
	return ed25519.PublicKey(b), true
}

// SignStandardEd25519 returns the Standard Webhooks asymmetric signature
// ("v1a,<base64>") of body sent with id at timestamp (Unix seconds).
func SignStandardEd25519(priv ed25519.PrivateKey, id string, timestamp int64, body []byte) string {
	msg := signedContent(id, strconv.FormatInt(timestamp, 10), body)
	return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(priv, msg))
}

func signedContent(id, timestamp string, body []byte) []byte {
	msg := make([]byte, 0, len(id)+len(timestamp)+len(body)+2)
	msg = append(msg, id...)
	msg = append(msg, '.')
	msg = append(msg, timestamp...)
	msg = append(msg, '.')
	return append(msg, body...)
}

// VerifyStandardEd25519 checks a Standard Webhooks delivery signed with
// ed25519: its timestamp within [StandardTolerance] of now, and any of the
// "v1a," signatures in signatures (the header's space-separated values)
// made over id, timestamp and body by the key of any of publicKeys (the
// "whpk_" keys the sender publishes; during a key rotation, two). Values
// of other versions ("v1,") are passed over.
func VerifyStandardEd25519(publicKeys []string, id, timestamp, signatures string, body []byte, now time.Time) error {
	var keys []ed25519.PublicKey
	for _, k := range publicKeys {
		if pub, ok := ParsePublicKey(k); ok {
			keys = append(keys, pub)
		}
	}
	if len(keys) == 0 {
		return ErrPublicKey
	}
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
	msg := signedContent(id, timestamp, body)
	for _, sig := range strings.Fields(signatures) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1a" {
			continue
		}
		got, err := base64.StdEncoding.Strict().DecodeString(value)
		if err != nil || len(got) != ed25519.SignatureSize {
			continue
		}
		for _, pub := range keys {
			if ed25519.Verify(pub, msg, got) {
				return nil
			}
		}
	}
	return ErrInvalidSignature
}

// PrivateKeyPrefix starts the private key a sender signs "v1a," with, as
// herald keeps and shows it.
const PrivateKeyPrefix = "whsk_"

// PrivateKeyString returns the form of an ed25519 private key that
// [ParsePrivateKey] reads: "whsk_" and the standard base64 of its 32-byte
// seed (RFC 8032's private key).
func PrivateKeyString(priv ed25519.PrivateKey) string {
	return PrivateKeyPrefix + base64.StdEncoding.EncodeToString(priv.Seed())
}

// ParsePrivateKey reads a private key: "whsk_" and the standard base64 of
// its 32-byte seed, or of the 64 bytes of seed and public key that
// libsodium and crypto/ed25519 keep (their public half must match the
// seed). ok is false for anything else.
func ParsePrivateKey(s string) (priv ed25519.PrivateKey, ok bool) {
	if !strings.HasPrefix(s, PrivateKeyPrefix) {
		return nil, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s[len(PrivateKeyPrefix):])
	if err != nil {
		return nil, false
	}
	switch len(b) {
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(b), true
	case ed25519.PrivateKeySize:
		priv = ed25519.NewKeyFromSeed(b[:ed25519.SeedSize])
		if !priv.Public().(ed25519.PublicKey).Equal(ed25519.PublicKey(b[ed25519.SeedSize:])) {
			return nil, false
		}
		return priv, true
	}
	return nil, false
}

// PublicKeyOf returns the "whpk_" public key of a "whsk_" private key; ok
// is false when s is not one.
func PublicKeyOf(s string) (pub string, ok bool) {
	priv, ok := ParsePrivateKey(s)
	if !ok {
		return "", false
	}
	return PublicKeyString(priv.Public().(ed25519.PublicKey)), true
}
