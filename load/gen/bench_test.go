package gen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// noopTransport answers at once without a network, so a benchmark measures the generator.
type noopTransport struct{}

func (noopTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Request: req,
		Body: io.NopCloser(strings.NewReader(""))}, nil
}

// BenchmarkPacer runs b.N requests of a constant-rate schedule against a no-op sender and
// reports the schedule lag (actual − intended release) and the CPU the whole process used per
// second of wall time, for the plain timer and for spin thresholds. Use a fixed count so each
// run is long enough for a p99: -benchtime=5000x takes 5 s at 1,000/s.
func BenchmarkPacer(b *testing.B) {
	modes := []struct {
		name string
		spin time.Duration
	}{
		{"timer", -1},
		{"spin=100us", 100 * time.Microsecond},
		{"spin=250us", 250 * time.Microsecond},
		{"spin=1ms", time.Millisecond},
	}
	for _, rate := range []float64{1000, 5000} {
		for _, m := range modes {
			b.Run(fmt.Sprintf("rate=%.0f/%s", rate, m.name), func(b *testing.B) {
				b.ReportAllocs()
				client := &http.Client{Transport: noopTransport{}}
				req := ChatRequest("http://loadgen.test/", []byte(`{}`))
				cpu0, wall0 := cpuTime(), time.Now()
				b.ResetTimer()
				c := Run(context.Background(), Config{Arrivals: NewConstant(rate), Request: req,
					Client: client, MaxRequests: b.N, SpinThreshold: m.spin,
					// No ceiling: on a loaded machine a stall of the whole process releases a
					// backlog at once, which the default bound of 1024 would partly drop.
					MaxInFlight: -1})
				b.StopTimer()
				if c.Completed != int64(b.N) {
					b.Fatalf("completed %d of %d: %+v", c.Completed, b.N, c)
				}
				us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
				b.ReportMetric(us(c.Lag.P50), "lag-p50-µs")
				b.ReportMetric(us(c.Lag.P99), "lag-p99-µs")
				b.ReportMetric(us(c.Lag.Max), "lag-max-µs")
				if cpu := cpuTime(); cpu > 0 {
					b.ReportMetric((cpu-cpu0).Seconds()/time.Since(wall0).Seconds(), "cpu-cores")
				}
			})
		}
	}
}

// BenchmarkArrivals measures one Next call of each process.
func BenchmarkArrivals(b *testing.B) {
	cases := []struct {
		name string
		make func() Arrivals
	}{
		{"constant", func() Arrivals { return NewConstant(100) }},
		{"poisson", func() Arrivals { return NewPoisson(100, seeded(1)) }},
		{"gamma k=0.25", func() Arrivals { return NewGamma(100, 0.25, seeded(1)) }},
		{"gamma k=4", func() Arrivals { return NewGamma(100, 4, seeded(1)) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			a := c.make()
			for b.Loop() {
				a.Next()
			}
		})
	}
	b.Run("trace", func(b *testing.B) {
		b.ReportAllocs()
		ts := make([]time.Duration, b.N)
		for i := range ts {
			ts[i] = time.Duration(i) * time.Millisecond
		}
		tr, _ := NewTrace(ts, 1.5)
		b.ResetTimer()
		for range b.N {
			tr.Next()
		}
	})
}
