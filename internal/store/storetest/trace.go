package storetest

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/internal/event"
	"github.com/heraldhq/herald/internal/store"
)

// testFireKeepsTraceContext: an event fired under a sampled span keeps that
// span's traceparent, and every claim and resend of its logs returns it; an
// event fired with no span keeps none.
func testFireKeepsTraceContext(t *testing.T, b *Bundle) {
	b.Webhook(t, "w")
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	const want = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"under a sampled span", trace.ContextWithSpanContext(b.Ctx, sc), want},
		{"with no span", b.Ctx, ""},
	}
	for _, tt := range tests {
		var id string
		err := b.St.InTx(tt.ctx, func(tx *store.Tx) error {
			var err error
			id, err = tx.Fire(tt.ctx, b.Account.ID, event.LicenseCreated, map[string]any{"case": tt.name})
			return err
		})
		if err != nil {
			t.Fatalf("%s: fire: %v", tt.name, err)
		}
		logID := b.logs(t, store.LogFilter{EventID: id})[0].ID
		r, err := b.Q.BeginResend(b.Ctx, b.Account.ID, logID, b.Clock.Now().Add(time.Minute))
		if err != nil {
			t.Fatalf("%s: resend: %v", tt.name, err)
		}
		if r.TraceParent != tt.want {
			t.Errorf("%s: resend's traceparent %q; want %q", tt.name, r.TraceParent, tt.want)
		}
		if err := b.Q.EndResend(b.Ctx, logID); err != nil {
			t.Fatal(err)
		}
		claimed := b.Claim(t, b.St, 0, time.Minute, 10, 10)
		if len(claimed) != 1 || claimed[0].EventID != id {
			t.Fatalf("%s: claimed %+v; want the log of event %s", tt.name, claimed, id)
		}
		if claimed[0].TraceParent != tt.want {
			t.Errorf("%s: claim's traceparent %q; want %q", tt.name, claimed[0].TraceParent, tt.want)
		}
		b.Complete(t, b.St, 50, Outcome(claimed[0], store.Delivered, 200, b.Clock.Now()))
	}
}
