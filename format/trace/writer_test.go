package trace

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMooncakeWriterLines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		why  string
		opt  WriterOptions
		req  Request
		want string
	}{
		{"plain", "AIPerf's field names and units, hash_ids always present",
			WriterOptions{}, Request{Timestamp: 3052 * time.Millisecond, InputLength: 7322, OutputLength: 490},
			`{"timestamp": 3052, "input_length": 7322, "output_length": 490, "hash_ids": []}`},
		{"fraction", "sub-millisecond times are written exactly",
			WriterOptions{}, Request{Timestamp: 1500*time.Microsecond + 7, InputLength: 1, HashIDs: []int64{0, 14}},
			`{"timestamp": 1.500007, "input_length": 1, "output_length": 0, "hash_ids": [0, 14]}`},
		{"rounded", "RoundMs rounds to whole milliseconds for integer-only consumers",
			WriterOptions{RoundMs: true}, Request{Timestamp: 1500 * time.Microsecond},
			`{"timestamp": 2, "input_length": 0, "output_length": 0, "hash_ids": []}`},
		{"session", "session_id is JSON-escaped and delay follows it",
			WriterOptions{}, Request{SessionID: `a"b`, Delay: 20 * time.Millisecond},
			`{"timestamp": 0, "input_length": 0, "output_length": 0, "hash_ids": [], "session_id": "a\"b", "delay": 20}`},
		{"omit session", "OmitSessions drops session_id and delay",
			WriterOptions{OmitSessions: true}, Request{SessionID: "s", Delay: time.Second},
			`{"timestamp": 0, "input_length": 0, "output_length": 0, "hash_ids": []}`},
	}
	for _, tc := range cases {
		var buf bytes.Buffer
		w := NewMooncakeWriter(&buf, tc.opt)
		if err := w.Write(tc.req); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if got := strings.TrimSuffix(buf.String(), "\n"); got != tc.want {
			t.Errorf("%s (%s):\n got %s\nwant %s", tc.name, tc.why, got, tc.want)
		}
	}
	w := NewMooncakeWriter(&bytes.Buffer{}, WriterOptions{})
	if err := w.Write(Request{Timestamp: -time.Millisecond}); err == nil {
		t.Error("a negative timestamp was written; replayers schedule from zero")
	}
}

// TestRoundTripAzureToMooncake converts the Azure code trace the way `trace convert` does and
// reads it back: lengths and timestamps must be identical, hash ids must cover each prompt in
// 512-token blocks without any reuse.
func TestRoundTripAzureToMooncake(t *testing.T) {
	t.Parallel()
	orig, _, err := ReadFile(sharedTrace(t, "azure2023/AzureLLMInferenceTrace_code.csv"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []WriterOptions{{}, {RoundMs: true}} {
		synth := NewHashSynth(0)
		var buf bytes.Buffer
		w := NewMooncakeWriter(&buf, opt)
		for _, r := range orig {
			synth.Assign(&r)
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		w.Flush()
		back, info, err := readAll(t, buf.String(), Options{})
		if err != nil || info.Format != FormatMooncake || len(back) != len(orig) {
			t.Fatalf("read back: %v, format %s, %d of %d requests", err, info.Format, len(back), len(orig))
		}
		for i := range orig {
			want := orig[i].Timestamp
			if opt.RoundMs {
				want = want.Round(time.Millisecond)
			}
			o, b := orig[i], back[i]
			if b.Timestamp != want || b.InputLength != o.InputLength || b.OutputLength != o.OutputLength ||
				len(b.HashIDs) != Blocks(o.InputLength, BlockTokens) {
				t.Fatalf("request %d (RoundMs %v): wrote %+v, read back %+v", i, opt.RoundMs, o, b)
			}
		}
		if s := summarize(back); s.ReusedBlocks != 0 || s.HashBlocks == 0 {
			t.Errorf("synthetic ids: %d blocks, %d reused; want unique ids", s.HashBlocks, s.ReusedBlocks)
		}
	}
}

// TestRoundTripMooncake writes a real Mooncake trace back out: it must read back equal,
// hash ids included.
func TestRoundTripMooncake(t *testing.T) {
	t.Parallel()
	orig, _, err := ReadFile(sharedTrace(t, "mooncake/synthetic_trace.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := NewMooncakeWriter(&buf, WriterOptions{})
	for _, r := range orig {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	back, _, err := readAll(t, buf.String(), Options{})
	if err != nil || len(back) != len(orig) {
		t.Fatalf("%v, %d of %d", err, len(back), len(orig))
	}
	for i := range orig {
		o, b := orig[i], back[i]
		if o.Timestamp != b.Timestamp || o.InputLength != b.InputLength || o.OutputLength != b.OutputLength || !slices.Equal(o.HashIDs, b.HashIDs) {
			t.Fatalf("request %d changed: %+v → %+v", i, o, b)
		}
	}
}

func TestHashSynth(t *testing.T) {
	t.Parallel()
	s := NewHashSynth(10)
	reqs := []Request{{InputLength: 512}, {InputLength: 513}, {InputLength: 0}, {InputLength: 5, HashIDs: []int64{7}}}
	for i := range reqs {
		s.Assign(&reqs[i])
	}
	want := [][]int64{{10}, {11, 12}, nil, {7}}
	for i, r := range reqs {
		if !slices.Equal(r.HashIDs, want[i]) {
			t.Errorf("request %d (input %d) got ids %v, want %v: one fresh id per started 512-token block, kept ids untouched", i, r.InputLength, r.HashIDs, want[i])
		}
	}
	if s.next != 13 {
		t.Errorf("next id %d, want 13", s.next)
	}
}

func TestSortAndRebase(t *testing.T) {
	t.Parallel()
	reqs := []Request{{Timestamp: 0, InputLength: 1}, {Timestamp: -500 * time.Millisecond, InputLength: 2}, {Timestamp: 0, InputLength: 3}}
	SortByTime(reqs)
	if shift := Rebase(reqs); shift != -500*time.Millisecond {
		t.Errorf("shift %v", shift)
	}
	var got []int
	for _, r := range reqs {
		got = append(got, r.InputLength)
	}
	if !slices.Equal(got, []int{2, 1, 3}) || reqs[0].Timestamp != 0 || reqs[2].Timestamp != 500*time.Millisecond {
		t.Errorf("order %v / %+v: want the early record first, equal times in file order, rebased to zero", got, reqs)
	}
}
