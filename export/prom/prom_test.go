package prom

import (
	"testing"

	"github.com/llmtap/llmtap/internal/promtest"
	"github.com/llmtap/llmtap/load/shadow"
	"github.com/llmtap/llmtap/mirror"
)

// TestMirrorAndShadow reads fixed mirror and shadow states through their collectors.
func TestMirrorAndShadow(t *testing.T) {
	mc := Mirror(func() MirrorReading {
		return MirrorReading{
			Counters: mirror.Counters{Sampled: 9, Sent: 7, Completed: 5, Failed: 1, Cut: 3, InFlight: 1, Skipped: map[string]uint64{mirror.SkipPaused: 2}},
			Gate:     mirror.GateState{Paused: true, Pauses: 4}, Pairs: 5,
		}
	})
	sc := Shadow(func() []shadow.Status {
		return []shadow.Status{{Name: "s", OK: 3, Errors: 1, Dropped: 2, InFlight: 1, Rate: 4, State: shadow.StatePaused}}
	})
	got := promtest.Gather(t, mc, sc)
	promtest.Check(t, got, map[string]float64{
		"llmtap_mirror_sampled_total": 9, "llmtap_mirror_sent_total": 7, "llmtap_mirror_completed_total": 5,
		"llmtap_mirror_failed_total": 1, "llmtap_mirror_cut_total": 3, "llmtap_mirror_in_flight": 1, "llmtap_mirror_paused": 1,
		"llmtap_mirror_pauses_total": 4, "llmtap_mirror_pairs_total": 5,
		"llmtap_mirror_skipped_total{reason=paused}":          2,
		"llmtap_shadow_requests_total{result=ok,shadow=s}":    3,
		"llmtap_shadow_requests_total{result=error,shadow=s}": 1,
		"llmtap_shadow_dropped_total{shadow=s}":               2,
		"llmtap_shadow_in_flight{shadow=s}":                   1,
		"llmtap_shadow_rate{shadow=s}":                        4,
		"llmtap_shadow_paused{shadow=s}":                      1,
	})
	for _, reason := range mirror.SkipReasons {
		if _, ok := got["llmtap_mirror_skipped_total{reason="+reason+"}"]; !ok {
			t.Errorf("no skip series for reason %s", reason)
		}
	}
}
