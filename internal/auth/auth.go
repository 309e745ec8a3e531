// Package auth owns herald's credentials: API tokens (random, stored as a
// SHA-256 hash, since they carry 256 bits of entropy a slow hash adds
// nothing to) and portal passwords (argon2id, since people choose them).
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// APITokenPrefix marks herald API tokens so secret scanners can find leaked ones.
const APITokenPrefix = "hrld_"

// PullTokenPrefix marks pull tokens, each a credential that reads one pull
// webhook's events and nothing else.
const PullTokenPrefix = "hrldpull_"

// NewPullToken returns a new random pull token.
func NewPullToken() string { return PullTokenPrefix + randomString(32) }

// WebhookTokenPrefix marks generated webhook signing tokens.
const WebhookTokenPrefix = "whsec_"

// NewAPIToken returns a new random API token.
func NewAPIToken() string { return APITokenPrefix + randomString(32) }

// WebhookKeySize is how many random bytes a generated webhook token holds.
const WebhookKeySize = 24

// NewWebhookToken returns a new random webhook signing token in the
// Standard Webhooks form, "whsec_" and the standard base64 of 24 random
// bytes: a standard-webhooks webhook's libraries take it as it is, and a
// herald-scheme webhook signs with its characters, as the specification
// says. The same form for both lets a webhook change scheme and keep its
// token.
func NewWebhookToken() string {
	b := make([]byte, WebhookKeySize)
	rand.Read(b)
	return WebhookTokenPrefix + base64.StdEncoding.EncodeToString(b)
}

// NewPassword returns a random password for a first start that was given none.
func NewPassword() string { return randomString(18) }

// HashToken returns the stored form of an API token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// argon2id parameters: RFC 9106's second recommended option (64 MiB, 3
// passes), with one lane per core of the two herald is sized for.
const (
	argonTime    = 3
	argonMemory  = 64 * 1024
	argonThreads = 2
	argonKeyLen  = 32
)

// HashPassword returns a PHC-format argon2id hash of password.
func HashPassword(password string) (string, error) {
	if password == "" {
		return "", errors.New("hash password: empty password")
	}
	salt := make([]byte, 16)
	rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// CheckPassword reports whether password matches a hash made by HashPassword,
// comparing in constant time.
func CheckPassword(hash, password string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var mem, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &t, &p); err != nil {
		return false
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return false
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, t, mem, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// NewLinkToken returns the secret of a single-use sign-in link (a portal
// link or an invitation), stored like an API token, as its SHA-256.
func NewLinkToken() string { return randomString(32) }

// SameToken compares a presented secret with the expected one through their
// SHA-256, in constant time: neither the secret's content nor its length
// shows in the time taken. An empty expected secret matches nothing.
func SameToken(expectedHash, presented string) bool {
	if expectedHash == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(HashToken(presented)), []byte(expectedHash)) == 1
}
