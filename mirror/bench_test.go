package mirror

import (
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/meter"
	"github.com/llmtap/llmtap/telemetry/record"
)

// nopMeasurer is never called: no copy runs in the benchmark.
type nopMeasurer struct{}

func (nopMeasurer) Begin(time.Time, string) *meter.Meter { panic("no copy should run") }
func (nopMeasurer) End(*meter.Meter, time.Time, string, string) *record.Record {
	panic("no copy should run")
}

// BenchmarkOfferPaused is the whole cost mirroring puts on a live request's path when the
// request is sampled: the id hash, the copy's URL and headers, and Send's checks, here ending
// at the paused gate so that no copy runs. A request the sample does not choose costs only the
// hash ("not-sampled").
func BenchmarkOfferPaused(b *testing.B) {
	for _, sampled := range []bool{true, false} {
		name := "sampled"
		fraction := 1.0
		if !sampled {
			name, fraction = "not-sampled", 1e-9
		}
		b.Run(name, func(b *testing.B) {
			gate := new(Gate)
			gate.Pause("benchmark")
			m, err := New(Options{Upstream: "http://127.0.0.1:9", Sample: fraction, Gate: gate, Measure: nopMeasurer{}})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(b.Context())
			r := liveRequest("1", chat)
			body := []byte(chat)
			b.ReportAllocs()
			for b.Loop() {
				m.Offer(r, "bench-request-id-0001").Send(body, false)
			}
		})
	}
}
