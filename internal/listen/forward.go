package listen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
)

// hopHeaders describe one connection, not the message (RFC 9110, section
// 7.6.1), so a forward drops them, along with any header that Connection
// names. Every other header passes unchanged, webhook-signature included.
var hopHeaders = []string{
	"Connection",
	"Proxy-Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

func endToEnd(h http.Header) http.Header {
	out := h.Clone()
	for _, field := range h.Values("Connection") {
		for name := range strings.SplitSeq(field, ",") {
			out.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopHeaders {
		out.Del(name)
	}
	return out
}

// forward passes a verified delivery on to cfg.Forward with the same method,
// body bytes and end-to-end headers, and relays the app's status, headers and
// body to w. It answers 502 when the app cannot be reached. It returns the
// line to print about it.
func (h *handler) forward(w http.ResponseWriter, r *http.Request, body []byte) string {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, h.cfg.Forward, bytes.NewReader(body))
	if err != nil {
		return h.badGateway(w, err)
	}
	req.Header = endToEnd(r.Header)
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // send none rather than Go's own
	}

	resp, err := h.cfg.Client.Do(req)
	if err != nil {
		return h.badGateway(w, err)
	}
	defer resp.Body.Close()
	maps.Copy(w.Header(), endToEnd(resp.Header))
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Sprintf("forwarded to %s: %s, but relaying its body failed: %v", h.cfg.Forward, resp.Status, err)
	}
	return fmt.Sprintf("forwarded to %s: %s", h.cfg.Forward, resp.Status)
}

func (h *handler) badGateway(w http.ResponseWriter, err error) string {
	if urlErr := new(url.Error); errors.As(err, &urlErr) {
		err = urlErr.Err // its text would repeat the method and the URL
	}
	problem := fmt.Sprintf("forward to %s failed: %v", h.cfg.Forward, err)
	reply(w, http.StatusBadGateway, answer{Error: problem})
	return problem + "; answered 502"
}
