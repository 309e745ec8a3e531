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
	if HashToken(a) == HashToken(b) || HashToken(a) != HashToken(a) || strings.Contains(HashToken(a), a) {
		t.Error("token hash is not a stable one-way function of the token")
	}
}
