package heraldtest

import (
	"testing"

	"github.com/heraldhq/herald/internal/receivertest"
)

// The receiving end is package receivertest's, which tests below the
// server use without starting one; it is named here too, so that a test
// starting heralds reads one package.

// Receiver is a real HTTP server on loopback (receivertest.Receiver).
type Receiver = receivertest.Receiver

// Request is what a receiver got (receivertest.Request).
type Request = receivertest.Request

// Held is a request a receiver holds unanswered (receivertest.Held).
type Held = receivertest.Held

// Output collects what a process writes (receivertest.Output).
type Output = receivertest.Output

// NewReceiver starts a receiver that answers 200 (receivertest.NewReceiver).
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	return receivertest.NewReceiver(t)
}

// TLSReceiver is a receiver over HTTPS that requires a client certificate
// (receivertest.TLSReceiver); CA and Pair make certificates for it.
type (
	TLSReceiver = receivertest.TLSReceiver
	CA          = receivertest.CA
	Pair        = receivertest.Pair
)

// NewTLSReceiver starts one (receivertest.NewTLSReceiver).
func NewTLSReceiver(t testing.TB) *TLSReceiver {
	t.Helper()
	return receivertest.NewTLSReceiver(t)
}
