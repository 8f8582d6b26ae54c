package trace

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/sample"
)

// TestSelectionKeepsWholeSessions: sessions start every 100 ms with turns 1 ms apart and a
// sessionless request 50 ms after each start. The slice 101–300 ms keeps the sessions whose
// first turn is in it, whole (the one at 300 too, its later turns past the end), not the one
// at 100 (though its later turns are in the slice), and the sessionless requests at 150 and
// 250; the first kept request is 49 ms after the start offset. A sample keeps exactly the
// sessions the seeded coin keeps, each whole.
func TestSelectionKeepsWholeSessions(t *testing.T) {
	t.Parallel()
	var reqs []Request
	for k := range 5 {
		at := time.Duration(k) * 100 * time.Millisecond
		for j := range 3 {
			reqs = append(reqs, Request{Timestamp: at + time.Duration(j)*time.Millisecond, SessionID: fmt.Sprintf("s%d", k)})
		}
		reqs = append(reqs, Request{Timestamp: at + 50*time.Millisecond})
	}
	SortByTime(reqs)
	count := func(kept []Request) map[string]int {
		n := map[string]int{}
		for _, q := range kept {
			n[q.SessionID]++
		}
		return n
	}
	start, end := 101*time.Millisecond, 300*time.Millisecond
	kept, lead, dropped := Selection{Ratio: 1, Start: &start, End: &end}.Apply(reqs)
	if got, want := fmt.Sprint(count(kept)), fmt.Sprint(map[string]int{"s2": 3, "s3": 3, "": 2}); got != want {
		t.Errorf("kept per session %s, want %s", got, want)
	}
	if lead != 49*time.Millisecond || dropped != len(reqs)-len(kept) {
		t.Errorf("lead %v, dropped %d; want 49ms and %d", lead, dropped, len(reqs)-len(kept))
	}
	kept, lead, _ = Selection{Ratio: 0.5, Seed: 7}.Apply(reqs)
	coin, got := sample.New(0.5, 7), count(kept)
	if n := len(got) - 1; n <= 0 || n >= 5 { // less the sessionless requests
		t.Fatalf("the sample kept %d of 5 sessions: the test shows nothing", n)
	}
	for k := range 5 {
		sid, want := fmt.Sprintf("s%d", k), 0
		if coin.Keep(sid) {
			want = 3
		}
		if got[sid] != want {
			t.Errorf("session %s: %d turns kept, want %d", sid, got[sid], want)
		}
	}
	if lead != 0 {
		t.Errorf("lead %v without a start offset, want 0", lead)
	}
}
