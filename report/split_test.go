package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// TestSplitBars writes records with a time split (an Ollama-like request: proxy 2 ms, queue
// 30, prefill 50, decode 100 of a 200 ms latency, so the network takes the 18 ms left) and one
// flagged request, loads them as a run and checks the HTML report's bars: the slowest first,
// each part as wide as its share of the latency, the flag shown.
func TestSplitBars(t *testing.T) {
	base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	f := func(v float64) *float64 { return &v }
	var recs []*record.Record
	for i := range 3 {
		r := rec(base, fmt.Sprintf("r%d", i), time.Duration(i)*time.Second, record.ClassLive, "m1", 80+float64(i), 120.0/9, 10)
		*r.RequestLatencyMs = 200 + float64(i)
		r.Split = &record.TimeSplit{ProxyMs: f(1), ConnectMs: f(0.5), SendMs: f(0.5), QueueMs: f(30), LoadMs: f(0),
			PrefillMs: f(50), DecodeMs: f(100), TTFTDisagree: i == 0}
		recs = append(recs, r)
	}
	recs = append(recs, rec(base, "nosplit", 0, record.ClassLive, "m1", 500, 5, 10)) // slowest, no split: not drawn
	rep := reportOf(t, recs)
	if len(rep.Splits) != 3 || rep.Splits[0].RequestID != "r2" || rep.Splits[2].RequestID != "r0" || !rep.Splits[2].Disagree || rep.Splits[0].Disagree {
		t.Fatalf("split rows %+v: want r2, r1, r0 (slowest first), r0 flagged", rep.Splits)
	}
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// The last row (r0, 200 ms): widths are shares of 420 units.
	want := map[string]float64{"proxy": 2, "queue": 30, "load": 0, "prefill": 50, "network": 18, "decode": 100}
	rows := regexp.MustCompile(`(?s)<tr><td>[^<]*</td><td>r0</td>.*?</tr>`).FindString(page)
	if rows == "" || !regexp.MustCompile(`<td>≠</td>`).MatchString(rows) {
		t.Fatalf("no flagged row for r0 in the report:\n%s", page)
	}
	rects := regexp.MustCompile(`<rect class="seg-([a-z]+)" x="[0-9.]+" y="1" width="([0-9.]+)"`).FindAllStringSubmatch(rows, -1)
	if len(rects) != len(want) {
		t.Fatalf("%d parts drawn, want %d: %s", len(rects), len(want), rows)
	}
	for _, m := range rects {
		w, _ := strconv.ParseFloat(m[2], 64)
		if exp := want[m[1]] / 200 * splitBarWidth; w < exp-0.01 || w > exp+0.01 {
			t.Errorf("%s is %.2f wide, want %.2f (%v of 200 ms)", m[1], w, exp, want[m[1]])
		}
	}
}
