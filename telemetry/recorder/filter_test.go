package recorder

import (
	"fmt"
	"testing"

	"github.com/llmtap/llmtap/telemetry/record"
)

func TestFilter(t *testing.T) {
	cases := []struct {
		name string
		why  string
		opt  Options
		r    record.Record
		keep bool
	}{
		{"default", "no filter keeps everything", Options{}, record.Record{Path: "/x"}, true},
		{"route prefix", "a listed prefix keeps the request", Options{Routes: []string{"/v1/chat/"}}, record.Record{Path: "/v1/chat/completions"}, true},
		{"other route", "a path under no prefix is left out", Options{Routes: []string{"/v1/chat/"}}, record.Record{Path: "/v1/embeddings"}, false},
		{"model glob", "model patterns use path.Match", Options{Models: []string{"llama-*"}}, record.Record{Model: "llama-3-8b"}, true},
		{"other model", "a model matching no pattern is left out", Options{Models: []string{"llama-*"}}, record.Record{Model: "qwen"}, false},
		{"both", "routes and models must both match", Options{Routes: []string{"/v1"}, Models: []string{"m"}}, record.Record{Path: "/v1/x", Model: "n"}, false},
	}
	for _, tc := range cases {
		if got := newFilter(tc.opt.withDefaults()).keep(&tc.r); got != tc.keep {
			t.Errorf("%s (%s): keep %v, want %v", tc.name, tc.why, got, tc.keep)
		}
	}
}

// TestSampling checks the kept fraction over 10,000 request ids (deterministic: the coin is a
// hash) and that a seed chooses a different but equally sized set, the same on every run.
func TestSampling(t *testing.T) {
	count := func(o Options) (int, map[string]bool) {
		f := newFilter(o.withDefaults())
		kept := map[string]bool{}
		for i := range 10000 {
			id := fmt.Sprintf("req-%d", i)
			if f.keep(&record.Record{RequestID: id}) {
				kept[id] = true
			}
		}
		return len(kept), kept
	}
	n, a := count(Options{Sample: 0.1})
	// A fair coin: 1000 ± 4.5 standard deviations (30).
	if n < 865 || n > 1135 {
		t.Errorf("kept %d of 10000 at sample 0.1", n)
	}
	n2, a2 := count(Options{Sample: 0.1})
	if n2 != n || fmt.Sprint(a2) != fmt.Sprint(a) {
		t.Error("the same seed chose a different set")
	}
	n3, b := count(Options{Sample: 0.1, Seed: 7})
	same := 0
	for id := range b {
		if a[id] {
			same++
		}
	}
	if n3 < 865 || n3 > 1135 || same > 200 {
		t.Errorf("seed 7 kept %d, %d in common with seed 0 (independent coins share ~100)", n3, same)
	}
	if n, _ := count(Options{Sample: 1}); n != 10000 {
		t.Errorf("sample 1 kept %d of 10000", n)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		opt  Options
		ok   bool
	}{
		{"minimal", Options{Dir: "d", Records: true}, true},
		{"no dir", Options{Records: true}, false},
		{"no kind", Options{Dir: "d"}, false},
		{"sample above 1", Options{Dir: "d", Records: true, Sample: 1.5}, false},
		{"bad pattern", Options{Dir: "d", Records: true, Models: []string{"["}}, false},
	}
	for _, tc := range cases {
		if err := tc.opt.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: error %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
