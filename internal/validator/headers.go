package validator

import (
	"fmt"

	"github.com/heraldhq/herald/internal/store"

	"sort"
	"strings"
)

// Bounds on a webhook's custom headers.
const (
	MaxHeaders     = 20
	MaxHeaderBytes = 4 << 10 // names and values together
)

// MaskedHeaderValue is how the API and the portal show a custom header's
// value; sent back unchanged it keeps the stored value, so that a webhook
// read and saved again keeps its headers.
const MaskedHeaderValue = store.MaskedHeaderValue

// reservedHeaders are herald's own, which a webhook's headers may not
// replace, and those that would change how the request is framed or
// routed rather than what it says.
var reservedHeaders = map[string]bool{
	"content-type": true, "content-length": true, "host": true, "user-agent": true,
	"connection": true, "keep-alive": true, "transfer-encoding": true, "te": true, "trailer": true,
	"upgrade": true, "proxy-authorization": true, "proxy-connection": true, "expect": true,
}

// CheckHeaders checks a webhook's custom headers: at most MaxHeaders, each
// name an RFC 9110 token that is not herald's own (Content-Type,
// Content-Length, Host, User-Agent, webhook-*) and not twice in any case,
// each value single-line text, MaxHeaderBytes in all. A value of
// MaskedHeaderValue takes the value the same name has in old (the stored
// headers), and is refused for a name old does not have. Names are kept
// as given.
func CheckHeaders(v *Errors, field string, h map[string]string, old map[string]string) {
	if len(h) > MaxHeaders {
		v.Add(field, fmt.Sprintf("must hold at most %d headers; it holds %d", MaxHeaders, len(h)))
		return
	}
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	seen := map[string]string{}
	total := 0
	for _, name := range names {
		value := h[name]
		f := fmt.Sprintf("%s[%q]", field, name)
		lower := strings.ToLower(name)
		switch {
		case !token(name):
			v.Add(f, "must be a header name: letters, digits and !#$%&'*+-.^_`|~ only")
			continue
		case reservedHeaders[lower] || strings.HasPrefix(lower, "webhook-"):
			v.Add(f, "is herald's own header (Content-Type, Content-Length, Host, User-Agent, webhook-*) or one that frames the request, and cannot be set")
			continue
		case seen[lower] != "":
			v.Add(f, fmt.Sprintf("is the same header as %q (names are case-insensitive)", seen[lower]))
			continue
		}
		seen[lower] = name
		if value == MaskedHeaderValue {
			prev, ok := old[name]
			if !ok {
				v.Add(f, "is the masked value "+MaskedHeaderValue+", which keeps a stored value, but this header has none; send the value itself")
				continue
			}
			h[name], value = prev, prev
		}
		if d := SingleLine(value); d != "" {
			v.Add(f, d)
			continue
		}
		if strings.TrimSpace(value) != value {
			v.Add(f, "must not begin or end with spaces")
			continue
		}
		total += len(name) + len(value)
	}
	if total > MaxHeaderBytes {
		v.Add(field, fmt.Sprintf("must hold at most %d bytes of names and values; it holds %d", MaxHeaderBytes, total))
	}
}

// token reports whether s is an RFC 9110 token, as a field name must be.
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// MaskHeaders returns h with every value masked, for showing.
func MaskHeaders(h map[string]string) map[string]string {
	if h == nil {
		return nil
	}
	out := make(map[string]string, len(h))
	for name := range h {
		out[name] = MaskedHeaderValue
	}
	return out
}
