package store

import "testing"

func TestRebindDollarSkipsQuotedText(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`SELECT a FROM t WHERE b = ? AND c = ?`, `SELECT a FROM t WHERE b = $1 AND c = $2`},
		{`SELECT '?' , ?`, `SELECT '?' , $1`},
		{`SELECT 'it''s ?', ?`, `SELECT 'it''s ?', $1`},
		{`SELECT '', ?, ''`, `SELECT '', $1, ''`},
		{`SELECT "odd?name" FROM t WHERE x = ?`, `SELECT "odd?name" FROM t WHERE x = $1`},
		{`SELECT "a""?b", ?`, `SELECT "a""?b", $1`},
		{"SELECT ? -- why?\nFROM t WHERE x = ?", "SELECT $1 -- why?\nFROM t WHERE x = $2"},
		{"SELECT ? -- trailing?", "SELECT $1 -- trailing?"},
		{`SELECT /* ? */ ?`, `SELECT /* ? */ $1`},
		{`SELECT /*/ ? */ ?`, `SELECT /*/ ? */ $1`},
		{`SELECT a - ?`, `SELECT a - $1`},
		{`SELECT a / ?`, `SELECT a / $1`},
		{`SELECT 'unterminated ?`, `SELECT 'unterminated ?`},
		{`SELECT 'é?', ?`, `SELECT 'é?', $1`},
	}
	for _, tt := range tests {
		if got := rebindDollar(tt.in); got != tt.want {
			t.Errorf("rebindDollar(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
