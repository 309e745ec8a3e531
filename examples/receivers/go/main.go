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
package main

import (
	"cmp"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
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

func receive(w http.ResponseWriter, r *http.Request) {
	p, err := webhook.Parse(webhook.RawBody(r))
	if err != nil {
		http.Error(w, "malformed payload", http.StatusBadRequest)
		return
	}
	// Herald may deliver an event more than once: de-duplicate on p.ID, and
	// queue slow work rather than doing it before answering.
	fmt.Println(p.Event, p.ID)
	w.WriteHeader(http.StatusNoContent)
}
