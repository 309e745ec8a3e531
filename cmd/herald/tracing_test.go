package main_test

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/heraldhq/herald/internal/heraldtest"
)

// collector is an in-process OTLP/HTTP collector: it decodes each protobuf
// export at /v1/traces and keeps the spans with their resources.
type collector struct {
	url   string
	mu    sync.Mutex
	spans []span
}

// span is one exported span with the attributes of the process that made it.
type span struct {
	*tracepb.Span
	resource map[string]string
}

func (s span) attr(key string) string { return attrs(s.Attributes)[key] }
func (s span) id() string             { return hex.EncodeToString(s.SpanId) }
func (s span) parent() string         { return hex.EncodeToString(s.ParentSpanId) }
func (s span) trace() string          { return hex.EncodeToString(s.TraceId) }

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[kv.Key] = v.GetStringValue()
		default:
			m[kv.Key] = strings.TrimSpace(fmt.Sprint(v.GetValue()))
			if i, ok := v.GetValue().(*commonpb.AnyValue_IntValue); ok {
				m[kv.Key] = fmt.Sprint(i.IntValue)
			}
		}
	}
	return m
}

func startCollector(t *testing.T, ln net.Listener) *collector {
	t.Helper()
	c := &collector{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("collector: %s %s as %q; want protobuf at /v1/traces", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = gz
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Errorf("collector: decode export: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			res := attrs(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans = append(c.spans, span{s, res})
				}
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	if ln != nil {
		srv.Listener.Close()
		srv.Listener = ln
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

func (c *collector) all() []span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]span(nil), c.spans...)
}

// tracedEnv points herald's exporter at c over OTLP/HTTP, exporting each
// span within 100 ms.
func tracedEnv(c *collector) []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + c.url, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_SERVICE_NAME=herald-test"}
}

// flakyReceiver answers 503 until ok is set, then 204, and records what it
// was sent.
type flakyReceiver struct {
	url      string
	ok       atomic.Bool
	mu       sync.Mutex
	eventIDs []string
	headers  []http.Header
}

func startFlakyReceiver(t *testing.T) *flakyReceiver {
	t.Helper()
	f := &flakyReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		f.mu.Lock()
		f.eventIDs = append(f.eventIDs, r.Header.Get("webhook-id"))
		f.headers = append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		if f.ok.Load() {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL + "/hooks/herald?key=receiver-credential"
	return f
}

func (f *flakyReceiver) received() (ids []string, headers []http.Header) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.eventIDs...), append([]http.Header(nil), f.headers...)
}

// TestTraceFollowsAnEventAcrossProcesses: a license.created fired through
// the API of one herald process, whose first attempt fails, and delivered by
// a second process started after the first stopped. The collector gets one
// trace: the API request's server span, and each attempt's client span
// (from either process) whose parent chain reaches it, carrying the event
// id. No attribute holds the API token, the webhook's signing token or its
// URL, and no delivery carries a trace header. Both engines.
func TestTraceFollowsAnEventAcrossProcesses(t *testing.T) {
	t.Parallel()
	heraldtest.ForEachStore(t, func(t *testing.T, dbURL string) {
		heraldtest.PostgresHandles(t, 1)
		col := startCollector(t, nil)
		rcv := startFlakyReceiver(t)
		env, token := serveEnv(t)
		env = append(env, "HERALD_DATABASE_URL="+dbURL, "HERALD_RETRY_INTERVAL=2s")
		env = append(env, tracedEnv(col)...)

		first := startServe(t, env, freeAddr(t))
		var hook struct{ ID, Token string }
		call(t, first.url, token, "POST", "/v3/webhooks", map[string]any{
			"name": "traced", "url": rcv.url, "events": []string{"license.created"}}, &hook)
		var product, license struct{ ID string }
		call(t, first.url, token, "POST", "/v3/products", map[string]any{"name": "P"}, &product)
		call(t, first.url, token, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, &license)
		heraldtest.Eventually(t, 30*time.Second, "the first attempt", func() bool { ids, _ := rcv.received(); return len(ids) > 0 })
		first.stop(t, syscall.SIGTERM) // flushes its spans
		firstPID := fmt.Sprint(first.cmd.Process.Pid)

		rcv.ok.Store(true)
		second := startServe(t, env, freeAddr(t))
		secondPID := fmt.Sprint(second.cmd.Process.Pid)
		heraldtest.Eventually(t, 30*time.Second, "the delivery by the second process", func() bool {
			for _, s := range col.all() {
				if s.Name == "delivery.attempt" && s.resource["process.pid"] == secondPID {
					return true
				}
			}
			return false
		})
		second.stop(t, syscall.SIGTERM)

		ids, headers := rcv.received()
		eventID := ids[0]
		spans := col.all()
		byID := map[string]span{}
		var api *span
		var attempts []span
		for _, s := range spans {
			byID[s.id()] = s
			switch {
			case s.Name == "POST /v3/licenses":
				api = &s
			case s.Name == "delivery.attempt" && s.attr("herald.event_id") == eventID:
				attempts = append(attempts, s)
			}
		}
		if api == nil {
			t.Fatalf("no server span named %q among %d spans", "POST /v3/licenses", len(spans))
		}
		if api.Kind != tracepb.Span_SPAN_KIND_SERVER || api.resource["process.pid"] != firstPID ||
			api.attr("http.route") != "POST /v3/licenses" || api.attr("http.response.status_code") != "201" {
			t.Errorf("API span: kind %v, pid %s, attributes %v; want a server span of process %s, route POST /v3/licenses, 201",
				api.Kind, api.resource["process.pid"], attrs(api.Attributes), firstPID)
		}
		if api.resource["service.name"] != "herald-test" || api.resource["service.version"] == "" {
			t.Errorf("resource %v; want service.name herald-test (OTEL_SERVICE_NAME) and a service.version", api.resource)
		}
		if len(attempts) < 2 {
			t.Fatalf("%d attempt spans for event %s; want the failed one and the delivery", len(attempts), eventID)
		}
		pids := map[string]bool{}
		for _, a := range attempts {
			pids[a.resource["process.pid"]] = true
			if a.trace() != api.trace() {
				t.Errorf("attempt %s is in trace %s; want the API request's %s", a.attr("herald.attempt"), a.trace(), api.trace())
			}
			if !reaches(byID, a, api.id()) {
				t.Errorf("attempt %s: its parent chain does not reach the API span %s", a.attr("herald.attempt"), api.id())
			}
			want := map[string]string{"herald.webhook_id": hook.ID, "herald.event_kind": "license.created"}
			if a.attr("herald.outcome") == "delivered" {
				want["http.response.status_code"] = "204"
			}
			for k, v := range want {
				if a.attr(k) != v {
					t.Errorf("attempt %s: %s = %q; want %q", a.attr("herald.attempt"), k, a.attr(k), v)
				}
			}
			if a.Kind != tracepb.Span_SPAN_KIND_CLIENT || a.attr("herald.log_id") == "" {
				t.Errorf("attempt %s: kind %v, log id %q; want a client span naming its log", a.attr("herald.attempt"), a.Kind, a.attr("herald.log_id"))
			}
		}
		if !pids[firstPID] || !pids[secondPID] {
			t.Errorf("attempt spans came from processes %v; want both %s and %s", pids, firstPID, secondPID)
		}
		for _, s := range spans {
			everything := fmt.Sprint(attrs(s.Attributes), s.resource, s.Status.GetMessage(), s.Name)
			for _, secret := range []string{token, hook.Token, rcv.url, "receiver-credential"} {
				if strings.Contains(everything, secret) {
					t.Errorf("span %q records %q: %s", s.Name, secret, everything)
				}
			}
		}
		for _, h := range headers {
			if h.Get("traceparent") != "" || h.Get("tracestate") != "" {
				t.Errorf("a delivery carried trace headers: %v", h)
			}
		}
	})
}

// reaches follows s's parents through byID and reports whether one is want.
func reaches(byID map[string]span, s span, want string) bool {
	for range 16 {
		if s.parent() == want {
			return true
		}
		p, ok := byID[s.parent()]
		if !ok {
			return false
		}
		s = p
	}
	return false
}

// TestNoTracingUnlessConfigured: with no OTEL_ variable herald starts no
// exporter, so the SDK's default endpoint (127.0.0.1:4318) hears nothing;
// with an endpoint and OTEL_SDK_DISABLED=true, the endpoint hears nothing.
func TestNoTracingUnlessConfigured(t *testing.T) {
	t.Parallel()
	off := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=", "OTEL_TRACES_EXPORTER=", "OTEL_SDK_DISABLED="}
	tests := []struct {
		name   string
		listen string // the collector's address; "" for any
		env    func(c *collector) []string
	}{
		{"no OTEL variables", "127.0.0.1:4318", func(*collector) []string { return off }},
		{"SDK disabled", "", func(c *collector) []string { return append(tracedEnv(c), "OTEL_SDK_DISABLED=true") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ln net.Listener
			if tt.listen != "" {
				var err error
				ln, err = net.Listen("tcp", tt.listen)
				heraldtest.SkipUnless(t, err == nil, fmt.Sprintf("the OTLP default port is taken here (%v)", err))
			}
			col := startCollector(t, ln)
			rcv := startFlakyReceiver(t)
			rcv.ok.Store(true)
			env, token := serveEnv(t)
			p := startServe(t, append(env, tt.env(col)...), freeAddr(t))
			var product struct{ ID string }
			call(t, p.url, token, "POST", "/v3/webhooks", map[string]any{"name": "h", "url": rcv.url, "events": []string{"license.created"}}, nil)
			call(t, p.url, token, "POST", "/v3/products", map[string]any{"name": "P"}, &product)
			call(t, p.url, token, "POST", "/v3/licenses", map[string]any{"productId": product.ID}, nil)
			heraldtest.Eventually(t, 30*time.Second, "the delivery", func() bool { ids, _ := rcv.received(); return len(ids) > 0 })
			p.stop(t, syscall.SIGTERM)
			if n := len(col.all()); n != 0 {
				t.Errorf("the collector got %d spans; want none", n)
			}
			if out := p.out.String(); bytes.Contains([]byte(out), []byte("spans not exported")) {
				t.Errorf("herald tried to export: %s", out)
			}
		})
	}
}
