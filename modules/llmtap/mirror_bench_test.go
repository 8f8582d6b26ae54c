package llmtap

import (
	"context"
	"testing"

	"github.com/llmtap/llmtap/mirror"
)

// BenchmarkServeHTTPMirrorOffer measures what mirroring adds to the live request's path: a
// 128-token stream through the handler without a mirror, and with a mirror that samples every
// request (the id hash, a copy of the headers, the body hook) but whose gate is paused, so the
// copy is decided and counted on the live path and then skipped: no copy runs in the
// background to blur the figure. A copy that is sent costs the same on the live path plus one
// goroutine start; its exchange runs on that goroutine.
func BenchmarkServeHTTPMirrorOffer(b *testing.B) {
	for _, withMirror := range []bool{false, true} {
		name := "llmtap"
		if withMirror {
			name = "llmtap+mirror"
		}
		b.Run(name, func(b *testing.B) {
			rig := newBenchRig(b, 128)
			if withMirror {
				gate := new(mirror.Gate)
				gate.Pause("benchmark")
				m, err := mirror.New(mirror.Options{Upstream: "http://127.0.0.1:9", Sample: 1,
					Measure: rig.h.tap.WithPool(rig.h.meters, rig.h.route), Gate: gate})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = m.Close(context.Background()) }) // b.Context is done by then
				rig.h.mirror = m
				rig.req.Header.Set("Authorization", "Bearer x")
				rig.req.Header.Set("Content-Type", "application/json")
			}
			rig.serve(b, true)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rig.serve(b, true)
			}
			b.StopTimer()
			rig.h.tap.Flush()
			if withMirror {
				if c := rig.h.mirror.Stats().Snapshot(); c.Skipped[mirror.SkipPaused] == 0 || c.Sent != 0 {
					b.Fatalf("counters %+v: every request should be offered and skipped as paused", c)
				}
			}
		})
	}
}
