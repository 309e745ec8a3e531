package delivery

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/attempt"
	"github.com/heraldhq/herald/webhook"
)

// rawServer accepts one connection, records the request bytes up to the end
// of the body, and answers 204.
func rawServer(t *testing.T) (url string, got <-chan []byte) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var buf bytes.Buffer
		r := bufio.NewReader(io.TeeReader(c, &buf))
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		io.ReadAll(req.Body)
		io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
		ch <- buf.Bytes()
	}()
	return "http://" + ln.Addr().String() + "/hook", ch
}

func TestSendWritesTheSpecifiedHeadersOnTheWire(t *testing.T) {
	url, got := rawServer(t)
	body := []byte(`{"id":"x","event":"license.created","data":{"name":"Zoë 🚀"},"triggeredAt":"2026-11-21T08:07:13.120Z"}`)
	sig := webhook.Sign("whsec_test", body)
	res := NewSender(time.Second, nil, "herald/test").Send(context.Background(), Request{URL: url, EventID: "x", Body: body, Signature: sig})
	if !res.OK() {
		t.Fatalf("send: %s", res.Err)
	}
	raw := string(<-got)
	for _, want := range []string{
		"POST /hook HTTP/1.1\r\n",
		"\r\nwebhook-signature: " + sig + "\r\n",
		"\r\nwebhook-id: x\r\n",
		"\r\nContent-Type: application/json; charset=utf-8\r\n",
		"\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n",
		"\r\nUser-Agent: herald/test\r\n",
		"\r\n\r\n" + string(body),
	} {
		if !strings.Contains(raw, want) {
			t.Errorf("request lacks %q:\n%s", want, raw)
		}
	}
}

func TestSendOutcomes(t *testing.T) {
	big := strings.Repeat("é", attempt.MaxResponseBody) // 2 bytes each: twice the cap
	tests := []struct {
		name    string
		handler http.HandlerFunc
		ok      bool
		errHas  string
		bodyLen int
	}{
		{"204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }, true, "", 0},
		{"299", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(299) }, true, "", 0},
		{"302 not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}, false, `302 redirect to "/elsewhere"`, -1},
		{"410", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(410) }, false, "answered 410", 0},
		{"slow", func(w http.ResponseWriter, r *http.Request) {
			// Read to the end, so the server watches the connection and
			// ends r's context when the sender gives up.
			io.Copy(io.Discard, r.Body)
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		}, false, "timed out after 200ms", 0},
		{"headers just under the bound", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Big", strings.Repeat("a", MaxResponseHeaderBytes-1024))
			w.WriteHeader(204)
		}, true, "", 0},
		{"headers over the bound", func(w http.ResponseWriter, r *http.Request) {
			for i := range 40 { // 40 × 1 KiB: over 32 KiB in all, though each is small
				w.Header().Set("X-Big-"+strconv.Itoa(i), strings.Repeat("a", 1024))
			}
			w.WriteHeader(204)
		}, false, "response headers exceed 32 KiB", -1},
		{"big body cut at 64 KiB", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) }, true, "", attempt.MaxResponseBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			res := NewSender(200*time.Millisecond, nil, "herald/test").Send(context.Background(),
				Request{URL: srv.URL, EventID: "x", Body: []byte(`{}`), Signature: "s"})
			if res.OK() != tt.ok || !strings.Contains(res.Err, tt.errHas) {
				t.Errorf("ok=%v err=%q; want ok=%v err containing %q", res.OK(), res.Err, tt.ok, tt.errHas)
			}
			if tt.bodyLen >= 0 && len(res.RespBody) != tt.bodyLen {
				t.Errorf("kept %d bytes of the response; want %d", len(res.RespBody), tt.bodyLen)
			}
			if res.Duration <= 0 {
				t.Errorf("duration %s", res.Duration)
			}
		})
	}
}
