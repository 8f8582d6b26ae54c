package trace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// TestReadSelected: a slice that keeps no session's first request is told apart from an empty
// trace, and the hook hears the counts; Model is the first model a request names.
func TestReadSelected(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	rows := `{"timestamp":0,"input_length":10,"output_length":5,"hash_ids":[1]}
{"timestamp":100,"input_length":10,"output_length":5,"hash_ids":[2],"model":"m1"}
{"timestamp":200,"input_length":10,"output_length":5,"hash_ids":[3],"model":"m2"}
`
	if err := os.WriteFile(path, []byte(rows), 0o600); err != nil {
		t.Fatal(err)
	}
	start := 150 * time.Millisecond
	var kept, dropped int
	reqs, _, lead, err := ReadSelected(path, Options{}, 0, Selection{Ratio: 1, Start: &start}, func(k, d int) { kept, dropped = k, d })
	if err != nil || len(reqs) != 1 || lead != 50*time.Millisecond || kept != 1 || dropped != 2 {
		t.Errorf("slice from 150 ms: %d requests, lead %v, hook %d/%d, %v; want 1, 50ms, 1/2", len(reqs), lead, kept, dropped, err)
	}
	if m := Model(reqs); m != "m2" {
		t.Errorf("Model of the slice %q, want m2", m)
	}
	all, _, _, err := ReadSelected(path, Options{}, 0, Selection{Ratio: 1}, nil)
	if err != nil || len(all) != 3 || Model(all) != "m1" || Model(all[:1]) != "" {
		t.Errorf("whole trace: %d requests, model %q, %v; want 3 and m1", len(all), Model(all), err)
	}
	late := 300 * time.Millisecond
	if _, _, _, err := ReadSelected(path, Options{}, 0, Selection{Ratio: 1, Start: &late}, func(int, int) {}); err == nil || !strings.Contains(err.Error(), "no session's first request") {
		t.Errorf("empty slice: %v", err)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := ReadSelected(empty, Options{Format: FormatMooncake}, 0, Selection{Ratio: 1}, nil); err == nil || !strings.Contains(err.Error(), "no requests") {
		t.Errorf("empty trace: %v", err)
	}
}
