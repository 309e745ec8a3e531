// Package conventions holds the tests of the house's rules that span the
// whole tree rather than one package: today, that every package says in a
// doc comment what it owns. It has no code of its own.
package conventions
