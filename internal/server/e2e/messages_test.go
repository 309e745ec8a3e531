package e2e_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// A refusal says what to do next, in plain text.
func TestRefusalsSayWhatToDoNext(t *testing.T) {
	t.Parallel()
	const operatorToken = "messages-operator-token-0123456789abcdef"
	h := heraldtest.Start(t, heraldtest.Options{OperatorToken: operatorToken, DenyPrivate: true})
	tests := []struct {
		name, method, path, token, body string
		status                          int
		want                            []string
	}{
		{"a loopback URL names the switch", "POST", "/v3/webhooks", h.Token,
			`{"name":"local","url":"http://127.0.0.1:9000/","events":["license.created"]}`, 422,
			[]string{"private or loopback address", "--allow-private-networks"}},
		{"the operator token on an account call", "GET", "/v3/webhooks", operatorToken, "", 401,
			[]string{"this is the operator token", "/v3/operator/"}},
		{"no token, written as is", "GET", "/v3/webhooks", "", "", 401,
			[]string{"Authorization: Bearer <token>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, h.URL+tt.path, strings.NewReader(tt.body))
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.HasSuffix(string(b), "\n") {
				t.Errorf("%d %q; want %d ending with a newline", resp.StatusCode, b, tt.status)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("answered %s; want %q in it", b, w)
				}
			}
		})
	}
}
