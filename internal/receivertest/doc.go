// Package receivertest is the receiving end of a test: a real HTTP server
// on loopback that records every request herald makes, byte for byte, and
// a log of a process's output that is safe to read while it is written. It
// imports no herald package, so a test on any floor can use it.
package receivertest
