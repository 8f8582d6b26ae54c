package recorder

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/telemetry/meter"
	"github.com/llmtap/llmtap/telemetry/record"
)

// toks returns n token ids starting at from.
func toks(from, n int) []uint {
	out := make([]uint, n)
	for i := range out {
		out[i] = uint(from + i)
	}
	return out
}

// TestPrefixChaining assigns ids to prompts sharing prefixes of various lengths after a base
// prompt of 3 blocks (1300 tokens): ids agree exactly for the blocks the prefix covers whole.
func TestPrefixChaining(t *testing.T) {
	base := toks(0, 1300) // blocks [0,512) [512,1024) [1024,1300)
	cases := []struct {
		name   string
		why    string
		prompt []uint
		want   int // leading ids shared with base
	}{
		{"identical", "the same prompt reuses every block, the partial last one too", base, 3},
		{"shares 600 tokens", "only the first block is whole inside the shared prefix", append(slices.Clone(base[:600]), toks(9000, 700)...), 1},
		{"shares exactly 1024", "two whole blocks shared, the third differs", append(slices.Clone(base[:1024]), toks(9000, 276)...), 2},
		{"differs in the first token", "chaining: equal later blocks do not share after a difference", append([]uint{99999}, base[1:]...), 0},
		{"longer prompt", "a prompt extending the base shares its whole blocks, not its partial last one", append(slices.Clone(base), toks(5000, 300)...), 2},
	}
	for _, tc := range cases {
		p := newPrefixIDs(testKey)
		a := p.assign(nil, base, trace.Blocks(len(base), trace.BlockTokens))
		b := p.assign(nil, tc.prompt, trace.Blocks(len(tc.prompt), trace.BlockTokens))
		shared := 0
		for shared < min(len(a), len(b)) && a[shared] == b[shared] {
			shared++
		}
		if shared != tc.want {
			t.Errorf("%s (%s): %d leading ids shared, want %d: %v vs %v", tc.name, tc.why, shared, tc.want, a, b)
		}
		for i := shared; i < len(b); i++ {
			if slices.Contains(a, b[i]) {
				t.Errorf("%s: id %d after the shared prefix also appears in the base prompt", tc.name, b[i])
			}
		}
	}
}

// TestIDCountFollowsInputLength pads with fresh ids or cuts so that len(hash_ids) is
// ceil(input_length/512), as Mooncake replay requires.
func TestIDCountFollowsInputLength(t *testing.T) {
	cases := []struct {
		name string
		why  string
		toks int
		want int
	}{
		{"template tokens", "the server counted a block more than the text shows", 1000, 3},
		{"fewer", "the server counted fewer tokens (a cut body): the list is cut", 1500, 1},
		{"no text", "no body: every id fresh", 0, 2},
		{"none", "no input tokens, no ids", 600, 0},
	}
	for _, tc := range cases {
		p := newPrefixIDs(testKey)
		got := p.assign(nil, toks(0, tc.toks), tc.want)
		if len(got) != tc.want {
			t.Errorf("%s (%s): %d ids, want %d", tc.name, tc.why, len(got), tc.want)
		}
		seen := map[int64]bool{}
		for _, id := range got {
			if seen[id] {
				t.Errorf("%s: id %d repeated within one prompt", tc.name, id)
			}
			seen[id] = true
		}
	}
}

var (
	testKey  = []byte("0123456789abcdef-fleet")
	otherKey = []byte("0123456789abcdef-other")
)

// TestIDsFromContentAndKey: two derivations with the same key (two recorders, two processes)
// give the same ids for the same prompt; another key gives other ids; every id is below 2^53.
func TestIDsFromContentAndKey(t *testing.T) {
	prompt := toks(7, 2000) // 4 blocks
	a := newPrefixIDs(testKey).assign(nil, prompt, 4)
	b := newPrefixIDs(slices.Clone(testKey)).assign(nil, prompt, 4)
	c := newPrefixIDs(otherKey).assign(nil, prompt, 4)
	if !slices.Equal(a, b) {
		t.Errorf("same key, same prompt, different ids: %v vs %v", a, b)
	}
	for i := range a {
		if a[i] == c[i] {
			t.Errorf("block %d has id %d under two keys", i, a[i])
		}
	}
	for _, id := range slices.Concat(a, c, newPrefixIDs(testKey).assign(nil, toks(0, 10), 5)) {
		if id < 0 || id >= 1<<53 {
			t.Errorf("id %d outside [0, 2^53)", id)
		}
	}
	// No key: the process's random key, the same for every recorder of the process.
	if x, y := newPrefixIDs(nil).assign(nil, prompt, 4), newPrefixIDs(nil).assign(nil, prompt, 4); !slices.Equal(x, y) || slices.Equal(x, a) {
		t.Errorf("keyless ids %v and %v should agree with each other and not with the keyed %v", x, y, a)
	}
}

// TestRotationKeepsIDs records the same prompt before and after a rotation, and in a second
// recorder with the same key: every file has the same ids for it.
func TestRotationKeepsIDs(t *testing.T) {
	body := chat("m", strings.Repeat("Lighthouses keep their lamps lit through the night. ", 80), 8)
	r, dir := open(t, Options{Trace: true, FleetKey: testKey, RotateBytes: 1})
	for i := range 2 {
		rc := rec(i, time.Now(), body)
		rc.InputTokens = 1200
		r.Submit(rc, nil)
	}
	closeRec(t, r)
	r2, dir2 := open(t, Options{Trace: true, FleetKey: testKey})
	rc := rec(5, time.Now(), body)
	rc.InputTokens = 1200
	r2.Submit(rc, nil)
	closeRec(t, r2)
	files, _ := filepath.Glob(filepath.Join(dir, "trace-*.jsonl"))
	if len(files) < 2 {
		t.Fatalf("no rotation: %v", files)
	}
	rs, _ := readAll(t, dir, recfile.KindTrace, trace.FormatMooncake)
	rs2, _ := readAll(t, dir2, recfile.KindTrace, trace.FormatMooncake)
	if len(rs) != 2 || len(rs2) != 1 || len(rs[0].HashIDs) != 3 {
		t.Fatalf("trace %+v %+v", rs, rs2)
	}
	want := rs[0].HashIDs[:2] // the third block holds template tokens the text does not show
	for _, got := range [][]int64{rs[1].HashIDs, rs2[0].HashIDs} {
		if !slices.Equal(got[:2], want) {
			t.Errorf("the same prompt after a rotation or in another recorder got ids %v, want prefix %v", got, want)
		}
		if got[2] == rs[0].HashIDs[2] {
			t.Errorf("a block the text does not show repeated id %d", got[2])
		}
	}
}

// TestTracePrefixThroughTokenizer runs real chat bodies through the recorder: two
// conversations with a long shared system prompt share their leading ids in the trace file.
func TestTracePrefixThroughTokenizer(t *testing.T) {
	r, dir := open(t, Options{Trace: true})
	shared := strings.Repeat("You answer questions about lighthouses, briefly and exactly. ", 120)
	for i, q := range []string{"Who keeps the lamp?", "How tall is the tower at Eddystone?"} {
		body := chat("m", shared+q, 8)
		rc := rec(i, time.Now(), body)
		rc.InputTokens = 1400
		r.Submit(rc, nil)
	}
	closeRec(t, r)
	rs, _ := readAll(t, dir, recfile.KindTrace, trace.FormatMooncake)
	if len(rs) != 2 || len(rs[0].HashIDs) != 3 {
		t.Fatalf("trace %+v", rs)
	}
	a, b := rs[0].HashIDs, rs[1].HashIDs
	if a[0] != b[0] || a[1] != b[1] {
		t.Errorf("a shared prefix of over 1024 tokens did not share its first two ids: %v vs %v", a, b)
	}
	if a[2] == b[2] {
		t.Errorf("different questions shared their last block id: %v vs %v", a, b)
	}
}

// TestHashIDsFromTheCountedTokens: a prompt the tokenizer counted when the record was
// finalized (meter.Finalize keeps its ids in record.PromptIDs) is not tokenized again: its
// hash_ids are cut from those ids, and they are the ids that tokenizing the body gives (the
// path of a record whose input tokens the server reported), byte for byte.
func TestHashIDsFromTheCountedTokens(t *testing.T) {
	t.Parallel()
	body := chat("m", strings.Repeat("Lighthouses keep their lamps lit through the night. ", 120), 8)
	counted := rec(0, time.Now(), body)
	counted.InputTokensSource, counted.InputTokens = record.SourceNone, -1
	meter.Finalize(counted, nil)
	if counted.InputTokensSource != record.SourceTokenizer || int64(len(counted.PromptIDs)) != counted.InputTokens || counted.InputTokens < 1024 {
		t.Fatalf("finalized %d input tokens (%s) with %d ids kept", counted.InputTokens, counted.InputTokensSource, len(counted.PromptIDs))
	}
	reported := rec(1, time.Now(), body) // the server's count: no ids, the recorder tokenizes
	reported.InputTokens = counted.InputTokens
	// Ids that no tokenizer gives for this body: taken as they are, never recomputed.
	planted := rec(2, time.Now(), body)
	planted.InputTokens, planted.PromptIDs = 1024, toks(7, 1024)

	r, dir := open(t, Options{Trace: true, FleetKey: testKey})
	for _, rc := range []*record.Record{counted, reported, planted} {
		r.Submit(rc, nil)
	}
	closeRec(t, r)
	rs, _ := readAll(t, dir, recfile.KindTrace, trace.FormatMooncake)
	if len(rs) != 3 {
		t.Fatalf("%d trace rows", len(rs))
	}
	if want := trace.Blocks(int(counted.InputTokens), trace.BlockTokens); len(rs[0].HashIDs) != want || !slices.Equal(rs[0].HashIDs, rs[1].HashIDs) {
		t.Errorf("hash_ids from the counted ids %v, from tokenizing the body %v: want the same %d", rs[0].HashIDs, rs[1].HashIDs, want)
	}
	if want := newPrefixIDs(testKey).assign(nil, toks(7, 1024), 2); !slices.Equal(rs[2].HashIDs, want) {
		t.Errorf("hash_ids %v, want %v: the record's token ids, not the body tokenized again", rs[2].HashIDs, want)
	}
}
