package tracing_test

import (
	"context"
	"testing"

	"github.com/heraldhq/herald/internal/tracing"
)

func TestEnabledOnlyWhenConfigured(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, false},
		{"exporter herald lacks", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false},
		{"SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, false},
		{"SDK disabled, any case", map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, false},
		{"SDK not disabled", map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{"only a service name", map[string]string{"OTEL_SERVICE_NAME": "herald-eu"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			if got := tracing.Enabled(getenv); got != tt.want {
				t.Errorf("Enabled = %v; want %v", got, tt.want)
			}
			p, err := tracing.FromEnv(context.Background(), getenv, "test")
			if err != nil {
				t.Fatal(err)
			}
			if (p != nil) != tt.want {
				t.Errorf("FromEnv made a provider: %v; want %v", p != nil, tt.want)
			}
			if err := p.Shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}

// With no OTEL_ variables there is no provider, hence no exporter, and the
// nil provider is safe to use.
func TestOffMeansNoProvider(t *testing.T) {
	t.Parallel()
	p, err := tracing.FromEnv(context.Background(), func(string) string { return "" }, "test")
	if err != nil || p != nil {
		t.Fatalf("FromEnv with nothing set: %v, %v; want nil, nil", p, err)
	}
	if tr := p.Tracer(); tr != nil {
		t.Errorf("a nil provider's tracer is %v; want nil", tr)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Errorf("shut down a nil provider: %v", err)
	}
}

func TestProtocol(t *testing.T) {
	t.Parallel()
	tests := []struct {
		general, traces, want string
		bad                   bool
	}{
		{"", "", "http/protobuf", false},
		{"grpc", "", "grpc", false},
		{"grpc", "http/protobuf", "http/protobuf", false},
		{"http/json", "", "", true},
	}
	for _, tt := range tests {
		env := map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": tt.general, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": tt.traces}
		got, err := tracing.Protocol(func(k string) string { return env[k] })
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("Protocol(%q, %q) = %q, %v; want %q (error %v)", tt.general, tt.traces, got, err, tt.want, tt.bad)
		}
	}
}

func TestTraceParentRoundTrip(t *testing.T) {
	t.Parallel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc := tracing.SpanContext(tp)
	if !sc.IsValid() || !sc.IsRemote() || !sc.IsSampled() {
		t.Fatalf("SpanContext(%q) = %+v; want a valid, remote, sampled one", tp, sc)
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		if tracing.SpanContext(bad).IsValid() {
			t.Errorf("SpanContext(%q) is valid; want invalid", bad)
		}
	}
	if got := tracing.TraceParent(context.Background()); got != "" {
		t.Errorf("TraceParent with no span = %q; want empty", got)
	}
}
