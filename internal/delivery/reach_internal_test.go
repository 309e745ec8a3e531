package delivery

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
)

// A webhook's OAuth2 token is fetched once for attempts made at once, kept
// until shortly before it expires (a quarter of its life for a short-lived
// one), and fetched again once for several attempts refused with it.
func TestOAuth2TokensAreSharedAndFetchedAgainOnce(t *testing.T) {
	t.Parallel()
	var fetched atomic.Int32
	var life atomic.Int32
	life.Store(3600)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := fetched.Add(1)
		time.Sleep(20 * time.Millisecond) // so that attempts at once overlap the fetch
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"Bearer","expires_in":%d}`, n, life.Load())
	}))
	t.Cleanup(srv.Close)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	tr := &http.Transport{}
	tk := newTokens(attempt.OAuth2{TokenURL: srv.URL, ClientID: "id", ClientSecret: "secret"}, tr, now)
	ctx := context.Background()

	var wg sync.WaitGroup
	got := make([]string, 20)
	for i := range got {
		wg.Go(func() {
			var err error
			if got[i], err = tk.token(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := fetched.Load(); n != 1 {
		t.Fatalf("20 attempts at once fetched %d tokens; want 1", n)
	}
	for _, tok := range got {
		if tok != "tok-1" {
			t.Fatalf("got tokens %v; want tok-1 for all", got)
		}
	}
	// Refused by the receiver: several attempts ask again; one fetch.
	for range 5 {
		wg.Go(func() {
			if tok, err := tk.refetch(ctx, "tok-1"); err != nil || tok != "tok-2" {
				t.Errorf("refetch: %q, %v; want tok-2", tok, err)
			}
		})
	}
	wg.Wait()
	if n := fetched.Load(); n != 2 {
		t.Fatalf("five refused attempts fetched %d tokens in all; want 2", n)
	}
	// Kept until a minute before it expires.
	clock.Add(int64(3540*time.Second - time.Second))
	if tok, _ := tk.token(ctx); tok != "tok-2" {
		t.Errorf("got %s 61 s before expiry; want tok-2 kept", tok)
	}
	clock.Add(int64(2 * time.Second))
	if tok, _ := tk.token(ctx); tok != "tok-3" {
		t.Errorf("got %s 59 s before expiry; want a new one", tok)
	}
	// A short-lived token is kept for three quarters of its life.
	life.Store(40)
	clock.Add(int64(time.Hour))
	if tok, _ := tk.token(ctx); tok != "tok-4" {
		t.Fatalf("got %s after expiry; want a new one", tok)
	}
	clock.Add(int64(20 * time.Second))
	if tok, _ := tk.token(ctx); tok != "tok-4" {
		t.Errorf("got %s halfway through a 40 s token; want it kept", tok)
	}
}
