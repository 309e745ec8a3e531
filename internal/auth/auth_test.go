package auth

import (
	"strings"
	"testing"
)

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("correct horse – Zoë")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h, "horse") || !strings.HasPrefix(h, "$argon2id$") {
		t.Fatalf("hash %q", h)
	}
	tests := []struct {
		password string
		want     bool
	}{
		{"correct horse – Zoë", true},
		{"correct horse – Zoe", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := CheckPassword(h, tt.password); got != tt.want {
			t.Errorf("CheckPassword(%q) = %v; want %v", tt.password, got, tt.want)
		}
	}
	if CheckPassword("not-a-hash", "x") {
		t.Error("malformed hash accepted")
	}
}

func TestTokensAreRandomAndHashed(t *testing.T) {
	a, b := NewAPIToken(), NewAPIToken()
	if a == b || !strings.HasPrefix(a, APITokenPrefix) {
		t.Fatalf("tokens %q %q", a, b)
	}
	if HashToken(a) == HashToken(b) || strings.Contains(HashToken(a), a) {
		t.Error("two tokens share a hash, or the hash holds the token")
	}
	// The stored form is the SHA-256 of the token, hex: a fixed known answer,
	// so a change of scheme (which would lock every client out) fails here.
	if got, want := HashToken("hrld_known"), "6d6d59c6d383f5bc6411a3c5961d7386893ad965f91c2d5796d41fb67d53ade7"; got != want {
		t.Errorf("HashToken = %s; want %s", got, want)
	}
}

func TestSameToken(t *testing.T) {
	const secret = "operator-token-0123456789abcdef0123456789"
	for _, tc := range []struct {
		name, expected, presented string
		want                      bool
	}{
		{"the token", HashToken(secret), secret, true},
		{"another token", HashToken(secret), secret + "x", false},
		{"a prefix", HashToken(secret), secret[:10], false},
		{"nothing presented", HashToken(secret), "", false},
		{"no token configured", "", "", false},
		{"the hash presented as the token", HashToken(secret), HashToken(secret), false},
	} {
		if got := SameToken(tc.expected, tc.presented); got != tc.want {
			t.Errorf("%s: got %v; want %v", tc.name, got, tc.want)
		}
	}
	if a, b := NewLinkToken(), NewLinkToken(); a == b || len(a) != 43 {
		t.Errorf("link tokens %q and %q; want two different 256-bit tokens", a, b)
	}
}
