// Package e2e holds the end-to-end tests of a whole herald against a started
// herald (package heraldtest): real databases, real receivers on loopback.
// Its tests sit above the server, so the package they test runs no server of
// its own. It has no code.
package e2e
