package e2e_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/heraldtest"
)

// openConns counts the sockets this process holds open on port, its
// herald's, other than the listener: the server's side of each client's
// connection. The package's tests run in parallel in this process, so a
// count of all its descriptors would count theirs too.
func openConns(t *testing.T, port string) int {
	t.Helper()
	held := map[string]bool{} // socket inodes of this process's descriptors
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(link, "socket:[") {
			held[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	want, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue // no IPv6 here
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] == "0A" { // a listener
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); err == nil && p == want && held[f[9]] {
				n++
			}
		}
	}
	return n
}

// trickle announces a body and sends it one byte a second, as a hostile
// client does, and returns the first line of whatever the server answered
// ("" when it closed without one) once the server ends the exchange; it
// fails the test if the server holds the connection for more than a bound far
// above the read deadline.
func trickle(t *testing.T, addr, request string) string {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, request); err != nil {
		t.Error(err)
		return ""
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Second):
				if _, err := conn.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Errorf("%s: the server still held the connection after 30 s", strings.SplitN(request, "\r\n", 2)[0])
	}
	return strings.TrimSpace(line)
}

// A client that trickles a body is cut at the read deadline, at sign-in
// and at the API with and without a token, and the descriptors it held are
// given back.
func TestSlowBodiesAreCut(t *testing.T) {
	t.Parallel()
	heraldtest.SkipShort(t, "waits out a 2 s read deadline, then a Test answered after 3 s")
	h := heraldtest.Start(t, heraldtest.Options{ReadTimeout: 2 * time.Second, Delivery: delivery.Config{AttemptTimeout: 10 * time.Second}})
	h.Must(200, "GET", "/v3/account", nil, nil) // warm up: the store's connections are open
	addr := strings.TrimPrefix(h.URL, "http://")
	_, port, _ := net.SplitHostPort(addr)
	before := openConns(t, port)
	head := "POST %s HTTP/1.1\r\nHost: herald\r\nContent-Type: %s\r\nContent-Length: 100000\r\n%s\r\n"
	requests := []string{
		fmt.Sprintf(head, "/signin", "application/x-www-form-urlencoded", ""),
		fmt.Sprintf(head, "/v3/products", "application/json", ""),
		fmt.Sprintf(head, "/v3/products", "application/json", "Authorization: Bearer "+h.Token+"\r\n"),
	}
	const each = 10
	var wg sync.WaitGroup
	answers := make([]string, len(requests)*each)
	for i := range answers {
		wg.Add(1)
		go func() { defer wg.Done(); answers[i] = trickle(t, addr, requests[i%len(requests)]) }()
	}
	wg.Wait()
	for i, a := range answers {
		// The server answers what it can (408 once it reads the deadline's
		// error, 401 or 403 before it reads the body at all) or just closes.
		if a != "" && !strings.HasPrefix(a, "HTTP/1.1 4") {
			t.Errorf("%s: answered %q", strings.SplitN(requests[i%len(requests)], "\r\n", 2)[0], a)
		}
	}
	heraldtest.Eventually(t, 60*time.Second, "the cut connections' descriptors given back", func() bool { return openConns(t, port) <= before })
	// A normal request still works, and one whose answer takes longer than
	// the read deadline is not cut: the deadline bounds reading only.
	rcv := heraldtest.NewReceiver(t)
	rcv.SetRespond(func(w http.ResponseWriter, r *http.Request) { time.Sleep(3 * time.Second) })
	hook := h.CreateWebhook("slow", rcv.URL, "license.created")
	var res struct{ Succeeded bool }
	h.Must(200, "POST", "/v3/webhooks/"+hook.ID+"/test", map[string]any{}, &res)
	if !res.Succeeded {
		t.Errorf("a Test answered after the read deadline did not succeed: %+v", res)
	}
}

// A body over the route's limit answers 413: 1 MiB at the API, 8 KiB at
// sign-in, 64 KiB for the portal's other forms.
func TestOversizedBodiesAre413(t *testing.T) {
	t.Parallel()
	h := heraldtest.Start(t, heraldtest.Options{})
	post := func(path, ct string, size int) int {
		t.Helper()
		var body string
		if ct == "application/json" {
			body = `{"name":"` + strings.Repeat("a", size-11) + `"}`
		} else {
			body = url.Values{"email": {strings.Repeat("a", size-6)}}.Encode()
		}
		req, _ := http.NewRequest("POST", h.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+h.Token)
		resp, err := h.Client.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		path, ct string
		size     int
		want     int
	}{
		{"/v3/products", "application/json", 1<<20 + 1, 413},
		{"/v3/products", "application/json", 1 << 20, 422}, // read whole; the name is too long
		{"/signin", "application/x-www-form-urlencoded", 8<<10 + 1, 413},
		{"/signin", "application/x-www-form-urlencoded", 8 << 10, 403}, // read whole; no sign-in cookie
	} {
		if got := post(c.path, c.ct, c.size); got != c.want {
			t.Errorf("POST %s with %d bytes: %d; want %d", c.path, c.size, got, c.want)
		}
	}
}
