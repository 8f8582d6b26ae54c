package mirror

import (
	"testing"

	"github.com/llmtap/llmtap/telemetry/record"
)

func rec(id, class, model string, ttft, itl, lat float64, errClass string) *record.Record {
	return &record.Record{RequestID: id, Class: class, Model: model, TTFTMs: &ttft, ITLMs: &itl, RequestLatencyMs: &lat, Error: errClass}
}

// TestPairing pairs records in either order, ignores unexpected ids and other classes, and
// computes the per-pair difference, not the difference of medians.
func TestPairing(t *testing.T) {
	p := NewPairer(0, 0)
	p.Consume(rec("x", record.ClassLive, "m", 1, 1, 1, "")) // nothing expected: ignored
	for _, id := range []string{"a", "b", "c", "d"} {
		p.Expect(id)
	}
	// a: live first; b: mirror first; c: mirror failed; d: a shadow record with the same id.
	p.Consume(rec("a", record.ClassLive, "m", 10, 2, 100, ""))
	p.Consume(rec("a", record.ClassMirror, "m", 13, 3, 150, ""))
	p.Consume(rec("b", record.ClassMirror, "m", 50, 6, 300, ""))
	p.Consume(rec("b", record.ClassLive, "m", 20, 4, 200, ""))
	p.Consume(rec("c", record.ClassLive, "m", 30, 5, 250, ""))
	p.Consume(rec("c", record.ClassMirror, "m", 0, 0, 0, record.ErrUpstream))
	p.Consume(rec("d", record.ClassShadow, "m", 1, 1, 1, ""))
	p.Consume(rec("zz", record.ClassMirror, "m", 1, 1, 1, ""))

	s := p.Summary()
	if s.Pairs != 3 || s.Pending != 1 || len(s.Models) != 1 {
		t.Fatalf("summary %+v: want 3 pairs, d pending, one model", s)
	}
	ms := s.Models[0]
	if ms.Pairs != 3 || ms.BothOK != 2 || ms.TTFT.Count != 2 {
		t.Fatalf("model summary %+v: want 3 pairs, 2 both ok", ms)
	}
	// TTFT live {10, 20}, mirror {13, 50}; differences {3, 30}: nearest-rank median 3.
	if ms.TTFT.Live.P50 != 10 || ms.TTFT.Mirror.P50 != 13 || ms.TTFT.Live.P99 != 20 || ms.TTFT.Mirror.P99 != 50 || ms.TTFT.DiffP50 != 3 {
		t.Errorf("TTFT comparison %+v", ms.TTFT)
	}
	if ms.ITL.DiffP50 != 1 || ms.Latency.DiffP50 != 50 {
		t.Errorf("ITL %+v latency %+v", ms.ITL, ms.Latency)
	}
	got := map[string]bool{}
	for _, pr := range p.Pairs() {
		got[pr.RequestID] = true
	}
	if len(got) != 3 || !got["a"] || !got["b"] || !got["c"] {
		t.Errorf("pairs %v, want a, b, c", got)
	}
}

// TestPairerBounds: pending copies are bounded (oldest given up and counted), duplicates
// replace, and the window keeps the most recent pairs.
func TestPairerBounds(t *testing.T) {
	p := NewPairer(2, 2)
	p.Expect("1")
	p.Expect("2")
	p.Expect("3") // evicts 1
	p.Expect("3") // replaces 3
	if s := p.Summary(); s.Pending != 2 || s.Unpaired != 2 {
		t.Fatalf("pending %d unpaired %d, want 2 and 2", s.Pending, s.Unpaired)
	}
	p.Consume(rec("1", record.ClassLive, "m", 1, 1, 1, ""))
	p.Consume(rec("1", record.ClassMirror, "m", 1, 1, 1, ""))
	for _, id := range []string{"2", "3"} {
		p.Consume(rec(id, record.ClassLive, "m", 1, 1, 1, ""))
		p.Consume(rec(id, record.ClassMirror, "m", 1, 1, 1, ""))
	}
	for _, id := range []string{"4", "5"} {
		p.Expect(id)
		p.Consume(rec(id, record.ClassLive, "m", 1, 1, 1, ""))
		p.Consume(rec(id, record.ClassMirror, "m", 1, 1, 1, ""))
	}
	prs := p.Pairs()
	if s := p.Summary(); s.Pairs != 4 || len(prs) != 2 || prs[0].RequestID != "4" || prs[1].RequestID != "5" {
		t.Errorf("total %d, window %v: want 4 pairs made (not the evicted 1), the last two kept in order", s.Pairs, prs)
	}
}
