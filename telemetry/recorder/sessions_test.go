package recorder

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/telemetry/record"
)

// turnRec is request i of session sid, arrived at start, whose exchange lasted dur.
func turnRec(i int, sid string, start time.Time, dur time.Duration) *record.Record {
	r := rec(i, start, chat("m", "turn", 4))
	r.SessionID = sid
	r.DurationMs = float64(dur) / float64(time.Millisecond)
	return r
}

// TestThinkTimeWritten records three sessions' turns, in the order they complete, and reads
// the trace and payload files back: a later turn's delay is its arrival minus the end of the
// previous turn's response in its session, a first turn has none, a turn sent before the
// previous one ended has 0, and with room for two sessions the third is not tracked (its second
// turn has no delay) and is counted.
func TestThinkTimeWritten(t *testing.T) {
	r, dir := open(t, Options{Trace: true, Payloads: true, MaxSessions: 2})
	t0 := time.Now()
	ms, us := time.Millisecond, time.Microsecond
	recs := []*record.Record{
		turnRec(0, "a", t0, 100*ms),                   // a1 ends at 100
		turnRec(1, "b", t0.Add(10*ms), 20*ms),         // b1 ends at 30
		turnRec(2, "", t0.Add(20*ms), 5*ms),           // no session
		turnRec(3, "a", t0.Add(400*ms), 50*ms),        // a2: thought 300 ms, ends at 450
		turnRec(4, "c", t0.Add(410*ms), 10*ms),        // c1: table full
		turnRec(5, "b", t0.Add(1030*ms), 10*ms),       // b2: thought 1,000 ms
		turnRec(6, "a", t0.Add(440*ms), 30*ms),        // a3: sent before a2 ended
		turnRec(7, "c", t0.Add(2000*ms), 10*ms),       // c2: c was not tracked
		turnRec(8, "a", t0.Add(470*ms+1250*us), 1*ms), // a4: 1.25 ms after a3 ended at 470
	}
	for _, x := range recs {
		r.Submit(x, nil)
	}
	closeRec(t, r)
	want := []struct {
		sid   string
		delay time.Duration
		has   bool
	}{{"a", 0, false}, {"b", 0, false}, {"", 0, false}, {"a", 300 * ms, true}, {"c", 0, false},
		{"b", 1000 * ms, true}, {"a", 0, true}, {"c", 0, false}, {"a", 1250 * us, true}}
	for _, kind := range []struct {
		name  string
		kind  string
		f     trace.Format
		field string
	}{{"trace", recfile.KindTrace, trace.FormatMooncake, `"delay": `}, {"payloads", recfile.KindPayloads, trace.FormatPayloads, `"delay_ms": `}} {
		rs, _ := readAll(t, dir, kind.kind, kind.f)
		if len(rs) != len(want) {
			t.Fatalf("%s: %d rows, want %d", kind.name, len(rs), len(want))
		}
		data, err := os.ReadFile(filesOf(t, dir, kind.kind)[0])
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for i, w := range want {
			if rs[i].SessionID != w.sid || rs[i].Delay != w.delay {
				t.Errorf("%s row %d: session %q delay %v, want %q %v", kind.name, i, rs[i].SessionID, rs[i].Delay, w.sid, w.delay)
			}
			if got := strings.Contains(lines[i], kind.field); got != w.has {
				t.Errorf("%s row %d has %s: %v, want %v\n%s", kind.name, i, kind.field, got, w.has, lines[i])
			}
		}
	}
	if st := r.Stats(); st.SessionsUntracked != 2 || st.SessionsExpired != 0 {
		t.Errorf("untracked %d expired %d, want 2 (c1, c2) and 0", st.SessionsUntracked, st.SessionsExpired)
	}
}

// TestSessionsExpire forgets a session idle longer than the limit: its next turn is a first
// turn again, and the table's size stays bounded.
func TestSessionsExpire(t *testing.T) {
	s := newSessions(2, time.Minute)
	t0 := time.Now()
	s.turn(turnRec(0, "a", t0, time.Second))
	s.turn(turnRec(1, "b", t0.Add(50*time.Second), time.Second))
	s.sweep(t0.Add(70 * time.Second)) // a ended 69 s ago, b 19 s ago
	if s.t.Len() != 1 || s.expired.Load() != 1 {
		t.Fatalf("after the sweep: %d sessions, %d expired; want 1 and 1", s.t.Len(), s.expired.Load())
	}
	if _, has := s.turn(turnRec(2, "a", t0.Add(71*time.Second), 0)); has {
		t.Error("a turn of a forgotten session has a delay")
	}
	if d, has := s.turn(turnRec(3, "b", t0.Add(72*time.Second), 0)); !has || d != 21*time.Second {
		t.Errorf("b's next turn: delay %v (%v), want 21s", d, has)
	}
	if _, has := s.turn(turnRec(4, "z", t0, 0)); has || s.untracked.Load() != 1 {
		t.Errorf("a third session in a table of two: untracked %d, want 1", s.untracked.Load())
	}
}

// TestSessionsSampledWhole records 200 three-turn sessions at sample 0.5: every session is
// in the trace with all its turns or not at all. A turn left out by a route filter still ends
// its session's previous turn: the next turn's delay counts from it.
func TestSessionsSampledWhole(t *testing.T) {
	r, dir := open(t, Options{Trace: true, Sample: 0.5, Seed: 3})
	t0 := time.Now()
	for k := range 200 {
		for j := range 3 {
			r.Submit(turnRec(3*k+j, fmt.Sprintf("s%d", k), t0.Add(time.Duration(j)*time.Second), 10*time.Millisecond), nil)
		}
	}
	closeRec(t, r)
	rs, _ := readAll(t, dir, recfile.KindTrace, trace.FormatMooncake)
	n := map[string]int{}
	for _, q := range rs {
		n[q.SessionID]++
	}
	for sid, c := range n {
		if c != 3 {
			t.Errorf("session %s: %d of its 3 turns recorded", sid, c)
		}
	}
	if len(n) < 50 || len(n) > 150 {
		t.Errorf("%d of 200 sessions recorded at sample 0.5", len(n))
	}

	r, dir = open(t, Options{Trace: true, Routes: []string{"/v1/chat"}})
	ms := time.Millisecond
	a1, a2, a3 := turnRec(0, "a", t0, 100*ms), turnRec(1, "a", t0.Add(200*ms), 100*ms), turnRec(2, "a", t0.Add(500*ms), 10*ms)
	a2.Path = "/v1/embeddings" // not recorded
	for _, x := range []*record.Record{a1, a2, a3} {
		r.Submit(x, nil)
	}
	closeRec(t, r)
	rs, _ = readAll(t, dir, recfile.KindTrace, trace.FormatMooncake)
	if len(rs) != 2 || rs[1].Delay != 200*ms {
		t.Errorf("after a turn left out: %d rows, last delay %v; want 2 and 200ms (from the left-out turn's end)", len(rs), rs[len(rs)-1].Delay)
	}
}
