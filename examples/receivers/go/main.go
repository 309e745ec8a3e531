// Command receiver is a minimal herald webhook receiver on net/http.
//
//	HERALD_WEBHOOK_TOKEN=whsec_... PORT=8000 go run ./examples/receivers/go
//
// While the webhook's token is being rotated, also set
// HERALD_WEBHOOK_NEXT_TOKEN to the next token: a delivery signed with either
// is accepted (see "Rotating the token" in docs/receiving.md).
//
// webhook.Middleware reads the raw body, verifies its signature in constant
// time and answers 401 when it does not match; the handler only ever sees
// verified deliveries.
//
// Each license's events carry a sequence. Deliveries can arrive out of
// order (a failed attempt is retried while newer events go through), so
// the receiver keeps the sequence of the last event it applied to each
// resource and skips an older or repeated one, printing it as stale (see
// "Applying events in order" in docs/receiving.md). A real receiver keeps
// that number beside the row it mirrors, in its own database.
package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/heraldhq/herald/webhook"
)

func main() {
	token := os.Getenv("HERALD_WEBHOOK_TOKEN")
	if token == "" {
		log.Fatal("set HERALD_WEBHOOK_TOKEN to the webhook's token")
	}
	addr := net.JoinHostPort("127.0.0.1", cmp.Or(os.Getenv("PORT"), "8000"))

	tokens := []string{token}
	if next := os.Getenv("HERALD_WEBHOOK_NEXT_TOKEN"); next != "" {
		tokens = append(tokens, next)
	}
	handler := webhook.MiddlewareAny(tokens, http.HandlerFunc(receive))

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("listening on", ln.Addr())
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}

// applied holds, by resource id (a license's or an activation's), the
// sequence of the last event applied to it.
var applied = struct {
	sync.Mutex
	m map[string]int64
}{m: map[string]int64{}}

func receive(w http.ResponseWriter, r *http.Request) {
	p, err := webhook.Parse(webhook.RawBody(r))
	if err != nil {
		http.Error(w, "malformed payload", http.StatusBadRequest)
		return
	}
	var resource struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(p.Data, &resource); err != nil {
		http.Error(w, "malformed payload", http.StatusBadRequest)
		return
	}
	// Herald may deliver an event more than once, and a retried one after
	// newer ones: apply an event only over older state. A stale one is
	// still answered 2xx, or herald would retry it. Queue slow work rather
	// than doing it before answering.
	applied.Lock()
	defer applied.Unlock()
	if !p.Newer(applied.m[resource.ID]) {
		fmt.Println(p.Event, p.ID, "stale")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if p.Sequence > 0 {
		applied.m[resource.ID] = p.Sequence
	}
	fmt.Println(p.Event, p.ID)
	w.WriteHeader(http.StatusNoContent)
}
