package fidelity

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// decided ranks an outcome by how decisive it is: a verdict either way is decided.
func decided(outcome string) bool { return outcome != NotEnough }

// TestMoreEvidenceNeverLessDecisive: an exact replay of a recording, judged without and then
// with the trace files the output asks for (--compare-traces: both sides' prompt blocks, the
// same blocks since the replay sends the recorded prompts), is never less decisive with them,
// and the traces take no share of the error rate (the number of comparisons that can declare a
// difference is unchanged). Issue 30 found an exact replay turned from reproduced to not
// enough requests by the traces. Also: a trace without blocks on one side is not compared
// (said so) rather than a comparison that cannot decide.
func TestMoreEvidenceNeverLessDecisive(t *testing.T) {
	t.Parallel()
	ids := func(n int) [][]int64 {
		out := make([][]int64, n)
		for i := range out {
			out[i] = []int64{int64(i % 7), int64(i % 7 * 10), int64(1000 + i)} // shared prefixes, a fresh tail
		}
		return out
	}
	for seed := uint64(1); seed <= 40; seed++ {
		for _, arr := range []string{"schedule", "poisson", "bursty"} {
			rec, rep := simulate(seed, scenario{name: "A/A", n: 2000, cv: 0.3, arrivals: arr, ttft: 1, input: 1})
			without := Judge(Side{Where: "proxy", Records: rec}, Side{Where: "proxy", Records: rep}, Options{})
			with := Judge(Side{Where: "proxy", Records: rec, HashIDs: ids(len(rec))}, Side{Where: "proxy", Records: rep, HashIDs: ids(len(rep))}, Options{})
			if decided(without.Outcome) && with.Outcome != without.Outcome {
				t.Errorf("seed %d, %s arrivals: %s without the traces, %s with them", seed, arr, without.Outcome, with.Outcome)
			}
			if with.Tests != without.Tests {
				t.Errorf("seed %d: %d comparisons that can declare a difference with the traces, %d without", seed, with.Tests, without.Tests)
			}
			half := Judge(Side{Where: "proxy", Records: rec, HashIDs: ids(len(rec))}, Side{Where: "proxy", Records: rep, HashIDs: make([][]int64, len(rep))}, Options{})
			if half.Outcome != without.Outcome || !strings.Contains(strings.Join(half.NotCompared, ";"), "has no hash_ids") {
				t.Errorf("seed %d: a replayed trace without blocks: %s (without traces %s), not compared %q", seed, half.Outcome, without.Outcome, half.NotCompared)
			}
		}
	}
}

// TestAtProxy: the replayed requests are found by request id in a proxy's records, which then
// stand for the replay (measured at the proxy, in the replay's order); the load is repeated
// while the proxy's recorder is still flushing; too few found leaves the client's side with a
// note saying so.
func TestAtProxy(t *testing.T) {
	t.Parallel()
	ms := func(v float64) *float64 { return &v }
	t0 := time.Unix(1_700_000_000, 0)
	var client, proxy []*record.Record
	for i := range 100 {
		id := fmt.Sprintf("bench-x-%d", i)
		client = append(client, &record.Record{RequestID: id, Start: t0.Add(time.Duration(i) * time.Second), TTFTMs: ms(103)})
		proxy = append(proxy, &record.Record{RequestID: id, Start: t0.Add(time.Duration(i)*time.Second + time.Millisecond), TTFTMs: ms(100)})
	}
	// Records of other requests (the recording itself) are not the replay's.
	other := []*record.Record{{RequestID: "live-1", TTFTMs: ms(5)}, {RequestID: "", TTFTMs: ms(5)}}
	calls := 0
	load := func() ([]*record.Record, error) {
		calls++
		if calls == 1 { // the last second's records not flushed yet
			return append(other, proxy[:90]...), nil
		}
		return append(other, proxy...), nil
	}
	side, ok, note, err := AtProxy(context.Background(), Side{Name: "rep", Where: "client", Records: client}, load, 5*time.Second, time.Millisecond)
	if err != nil || !ok || side.Where != "proxy" || len(side.Records) != 100 || calls != 2 {
		t.Fatalf("ok %v, where %q, %d records after %d loads (%v)", ok, side.Where, len(side.Records), calls, err)
	}
	for i, r := range side.Records {
		if r != proxy[i] {
			t.Fatalf("record %d is %+v, want the proxy's %+v", i, r, proxy[i])
		}
	}
	if !strings.Contains(note, "100 of 100") {
		t.Errorf("note %q", note)
	}
	v := Judge(Side{Where: "proxy", Records: proxy}, side, Options{})
	if !strings.HasPrefix(v.Measured, "both sides measured at the proxy") || !strings.Contains(v.Measured, "found by request id") {
		t.Errorf("measured: %q", v.Measured)
	}
	// Too few found: the client's side, unchanged, and a note saying how many.
	few := func() ([]*record.Record, error) { return proxy[:50], nil }
	side, ok, note, err = AtProxy(context.Background(), Side{Name: "rep", Where: "client", Records: client}, few, time.Second, time.Millisecond)
	if err != nil || ok || side.Where != "client" || len(side.Records) != 100 || !strings.Contains(note, "50 of the replay's 100") {
		t.Errorf("half found: ok %v, where %q, %d records, note %q (%v)", ok, side.Where, len(side.Records), note, err)
	}
	// None found (the replay did not go through that proxy): one more load after a poll, then
	// the client's side.
	calls = 0
	none := func() ([]*record.Record, error) { calls++; return other, nil }
	if _, ok, _, _ := AtProxy(context.Background(), Side{Records: client}, none, time.Minute, time.Millisecond); ok || calls != 2 {
		t.Errorf("none found: ok %v after %d loads, want not ok after 2", ok, calls)
	}
}
