// Package secret encrypts the secrets herald must be able to read back, such
// as webhook signing tokens, with AES-256-GCM under one server key. Secrets
// herald only ever compares (API tokens, passwords) are hashed instead, in
// package auth.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeySize is the length of a server key in bytes.
const KeySize = 32

// Box seals and opens secrets under one key.
type Box struct {
	aead cipher.AEAD
	key  []byte
}

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret key: got %d bytes; want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return &Box{aead: aead, key: key}, nil
}

// Seal encrypts plaintext, bound to context (e.g. the owning row's id) so that
// a sealed value copied to another row does not open there.
func (b *Box) Seal(plaintext, context []byte) []byte {
	nonce := make([]byte, b.aead.NonceSize())
	rand.Read(nonce)
	return b.aead.Seal(nonce, nonce, plaintext, context)
}

// Open decrypts a value made by Seal with the same context.
func (b *Box) Open(sealed, context []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("open secret: value too short")
	}
	out, err := b.aead.Open(nil, sealed[:n], sealed[n:], context)
	if err != nil {
		return nil, fmt.Errorf("open secret: %w", err)
	}
	return out, nil
}

// Check returns a value that identifies the key without revealing it, so a
// database can tell at start-up that it is being opened with the wrong key.
func (b *Box) Check() string {
	m := hmac.New(sha256.New, b.key)
	m.Write([]byte("herald key check v1"))
	return base64.RawStdEncoding.EncodeToString(m.Sum(nil))
}

// ParseKey decodes a base64 (standard or URL alphabet, padded or not) key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != KeySize {
				return nil, fmt.Errorf("secret key: got %d bytes; want %d", len(k), KeySize)
			}
			return k, nil
		}
	}
	return nil, errors.New("secret key: not base64")
}

// LoadOrCreateKeyFile reads the key in path, or creates path (mode 0600) with
// a new random key when it does not exist. created reports which.
func LoadOrCreateKeyFile(path string) (key []byte, created bool, err error) {
	k, err := ReadKeyFile(path)
	if !errors.Is(err, os.ErrNotExist) {
		return k, false, err
	}
	k = make([]byte, KeySize)
	rand.Read(k)
	if err := WriteKeyFile(path, k); err != nil {
		return nil, false, err
	}
	return k, true, nil
}

// ReadKeyFile reads the key in path; its error wraps os.ErrNotExist when
// there is no such file.
func ReadKeyFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	k, err := ParseKey(string(data))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

// WriteKeyFile writes key to path, a new file of mode 0600 (an existing
// file is refused, never replaced), and syncs it to disk.
func WriteKeyFile(path string, key []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create key file: %w", err)
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("write key file: %w", err)
	}
	return nil
}
