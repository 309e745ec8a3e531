package secret

import (
	"bytes"
	"path/filepath"
	"testing"
)

func TestSealOpenBindsContext(t *testing.T) {
	key := bytes.Repeat([]byte{7}, KeySize)
	b, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed := b.Seal([]byte("whsec_Zoë"), []byte("row-1"))
	if bytes.Contains(sealed, []byte("whsec")) {
		t.Fatal("sealed value holds the plaintext")
	}
	got, err := b.Open(sealed, []byte("row-1"))
	if err != nil || string(got) != "whsec_Zoë" {
		t.Fatalf("got %q, %v; want whsec_Zoë", got, err)
	}
	if _, err := b.Open(sealed, []byte("row-2")); err == nil {
		t.Error("opened under another row's context")
	}
	other, _ := New(bytes.Repeat([]byte{8}, KeySize))
	if _, err := other.Open(sealed, []byte("row-1")); err == nil {
		t.Error("opened under another key")
	}
	if b.Check() == other.Check() {
		t.Error("two keys share a check value")
	}
}

func TestKeyFileIsCreatedOnceAndReread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.key")
	k1, created, err := LoadOrCreateKeyFile(path)
	if err != nil || !created {
		t.Fatalf("first load: created=%v err=%v", created, err)
	}
	k2, created, err := LoadOrCreateKeyFile(path)
	if err != nil || created || !bytes.Equal(k1, k2) {
		t.Fatalf("second load: created=%v err=%v same=%v", created, err, bytes.Equal(k1, k2))
	}
}
