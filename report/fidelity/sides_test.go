package fidelity

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// TestCompareLabelsSides: Compare (`report --compare`) of two benchmark runs names them first and
// second, not "recorded" and "replayed" (issue 34); a replay is still judged as one.
func TestCompareLabelsSides(t *testing.T) {
	t.Parallel()
	recs := func(class string) []*record.Record {
		var out []*record.Record
		base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
		for i := range 50 {
			ttft, itl, lat := 20+float64(i%7), 5.0, 80.0
			out = append(out, &record.Record{RequestID: fmt.Sprint(i), Class: class, Model: "m", Status: 200, Stream: true,
				Start: base.Add(time.Duration(i) * 100 * time.Millisecond), TTFTMs: &ttft, ITLMs: &itl, RequestLatencyMs: &lat,
				DurationMs: lat, OutputTokens: 12, InputTokens: 100})
		}
		return out
	}
	for _, c := range []struct {
		class, want, not string
	}{
		{record.ClassBench, "comparison of run-b to run-a", "replayed"},
		{record.ClassReplay, "fidelity of run-b (replayed) to run-a (recorded)", "first"},
	} {
		var b strings.Builder
		a := Side{Name: "run-a", Where: "client", Records: recs(record.ClassBench)}
		other := Side{Name: "run-b", Where: "client", Records: recs(c.class)}
		if err := Compare(&b, a, other, Options{}); err != nil {
			t.Fatal(err)
		}
		if out := b.String(); !strings.Contains(out, c.want) || strings.Contains(out, c.not) {
			t.Errorf("%s runs compared:\n%s\nwant %q and no %q", c.class, out, c.want, c.not)
		}
	}
}
