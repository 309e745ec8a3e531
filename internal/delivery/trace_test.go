package delivery_test

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/queue"
	"github.com/heraldhq/herald/internal/store"
	"github.com/heraldhq/herald/internal/testdb"
)

// Every POST is a client span: an automatic attempt is a child of the span
// that fired the event (restored from the store, as another process would),
// a resend a child of its caller linked to that span, and a Test a child of
// its caller. A failed attempt has an error status; a retry keeps the
// trace. Both engines.
func TestAttemptSpansContinueTheFiringTrace(t *testing.T) {
	t.Parallel()
	testdb.ForEachStore(t, func(t *testing.T, dbURL string) {
		testdb.PostgresHandles(t, 1)
		fail := make(chan bool, 1)
		fail <- true // the first attempt fails, the second succeeds
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			if r.Header.Get("traceparent") != "" {
				t.Errorf("a delivery carried traceparent %q; herald sends no trace headers", r.Header.Get("traceparent"))
			}
			select {
			case <-fail:
				w.WriteHeader(http.StatusServiceUnavailable)
			default:
				w.WriteHeader(http.StatusNoContent)
			}
		}))
		defer rcv.Close()

		ctx := context.Background()
		key := make([]byte, 32)
		rand.Read(key)
		st, err := store.Open(ctx, dbURL, store.Options{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		acct, err := st.CreateAccount(ctx, store.Bootstrap{AccountName: "a", OwnerEmail: "a@example.com", PasswordHash: "x", TokenHash: store.NewID()})
		if err != nil {
			t.Fatal(err)
		}
		hook, err := st.CreateWebhook(ctx, acct.ID, store.NewWebhook{Name: "h", URL: rcv.URL,
			Events: []event.Kind{event.LicenseCreated}, Enabled: true, Token: "whsec_trace_token_0123456789abcdef"})
		if err != nil {
			t.Fatal(err)
		}

		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		tracer := tp.Tracer("test")
		fireCtx, firing := tracer.Start(ctx, "POST /v3/licenses")
		var eventID string
		if err := st.InTx(fireCtx, func(tx *store.Tx) error {
			eventID, err = tx.Fire(fireCtx, acct.ID, event.LicenseCreated, map[string]any{"id": "l1"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		firing.End()

		d := delivery.New(queue.New(st).ForDelivery(), delivery.Config{Tracer: tracer, RetryInterval: 10 * time.Millisecond, PollInterval: 20 * time.Millisecond})
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { d.Run(runCtx); close(done) }()
		attempts := func() []sdktrace.ReadOnlySpan { return named(rec.Ended(), delivery.SpanAttempt) }
		testdb.Eventually(t, 30*time.Second, "two attempt spans", func() bool { return len(attempts()) >= 2 })
		stop()
		<-done

		want := firing.SpanContext()
		for i, s := range attempts()[:2] {
			if s.Parent().SpanID() != want.SpanID() || s.SpanContext().TraceID() != want.TraceID() {
				t.Errorf("attempt %d: parent %s in trace %s; want the firing span %s in %s", i+1,
					s.Parent().SpanID(), s.SpanContext().TraceID(), want.SpanID(), want.TraceID())
			}
			attrs := attrMap(s.Attributes())
			wantAttrs := map[string]string{"herald.event_id": eventID, "herald.event_kind": string(event.LicenseCreated),
				"herald.webhook_id": hook.ID, "herald.attempt": []string{"1", "2"}[i],
				"http.response.status_code": []string{"503", "204"}[i], "herald.outcome": []string{"retry", "delivered"}[i]}
			for k, v := range wantAttrs {
				if attrs[k] != v {
					t.Errorf("attempt %d: %s = %q; want %q", i+1, k, attrs[k], v)
				}
			}
			if attrs["herald.log_id"] == "" {
				t.Errorf("attempt %d has no herald.log_id", i+1)
			}
			if code := []codes.Code{codes.Error, codes.Unset}[i]; s.Status().Code != code {
				t.Errorf("attempt %d: status %v; want %v", i+1, s.Status().Code, code)
			}
		}

		logs, _, err := st.Logs(ctx, acct.ID, store.LogFilter{EventID: eventID, Page: store.Page{Limit: 1}})
		if err != nil || len(logs) != 1 {
			t.Fatalf("logs of the event: %v, %v", logs, err)
		}
		reqCtx, request := tracer.Start(ctx, "POST /v3/webhook-event-logs/{id}/resend")
		if err := d.Resend(reqCtx, acct.ID, logs[0].ID); err != nil {
			t.Fatal(err)
		}
		request.End()
		if _, err := d.Test(reqCtx, acct.ID, hook.ID, event.LicenseUpdated, delivery.TestOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{delivery.SpanResend, delivery.SpanTest} {
			spans := named(rec.Ended(), name)
			if len(spans) != 1 {
				t.Fatalf("%d %s spans; want 1", len(spans), name)
			}
			if s := spans[0]; s.Parent().SpanID() != request.SpanContext().SpanID() {
				t.Errorf("%s: parent %s; want the request's span %s", name, s.Parent().SpanID(), request.SpanContext().SpanID())
			}
		}
		resend := named(rec.Ended(), delivery.SpanResend)[0]
		if l := resend.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != want.SpanID() {
			t.Errorf("resend links %v; want the firing span %s", l, want.SpanID())
		}
		if got := attrMap(resend.Attributes())["herald.event_id"]; got != eventID {
			t.Errorf("resend's herald.event_id %q; want %q", got, eventID)
		}
	})
}

func named(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attrMap(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}
