package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/shadow/mockllm"
	"github.com/llmtap/llmtap/shadow/trace"
)

// conversationTurn is the chat request of turn k of conversation c: a system prompt every
// conversation shares, then the conversation's turns so far (each long enough to span a block),
// so later turns share ever longer prefixes with earlier ones.
func conversationTurn(c, k int) []byte {
	msgs := []map[string]string{{"role": "system", "content": strings.Repeat("You keep the lighthouse log: wind, sea state, ships sighted. ", 60)}}
	for j := 0; j <= k; j++ {
		role := "user"
		if j%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]string{"role": role, "content": fmt.Sprintf("Conversation %d, turn %d: ", c, j) +
			strings.Repeat(fmt.Sprintf("entry %d-%d, the lamp burned steadily and the fog horn sounded twice. ", c, j), 45)})
	}
	b, _ := json.Marshal(map[string]any{"model": "rec-model", "stream": true, "max_tokens": 4, "messages": msgs})
	return b
}

// prefixReuse is the share of hash ids of a trace, in arrival order, that an earlier row (or
// an earlier block of the same row) already had: the prefix-cache hit rate a replay sees.
func prefixReuse(reqs []trace.Request) (float64, int) {
	seen := map[int64]bool{}
	hit, total := 0, 0
	for _, r := range reqs {
		for _, id := range r.HashIDs {
			if seen[id] {
				hit++
			}
			seen[id] = true
			total++
		}
	}
	return float64(hit) / float64(max(total, 1)), total
}

// TestTraceMergeThreeInstances records the same multi-turn conversations through three
// recording sites (three recorders, three folders, requests spread round-robin, one of them
// rotating its trace file often) and through one, merges the three folders' trace files with
// `llmtap trace merge`, and checks that the merged trace reuses prefixes exactly as the
// single recording does: block ids agree across recorders and rotations, and the merge keeps
// that sharing.
func TestTraceMergeThreeInstances(t *testing.T) {
	t.Setenv("LLMTAP_FLEET_KEY", "6c6c6d7461702d666c6565742d6b65792d7465737421")
	_, mockURL := testkit.StartMock(t, mockllm.Config{Model: "rec-model", TTFT: time.Millisecond, ITL: time.Millisecond, Usage: mockllm.UsageAlways, Seed: 3})
	root := t.TempDir()
	admin := testkit.FreeAddr(t)
	var cf strings.Builder
	fmt.Fprintf(&cf, "{\n\tadmin %s\n\tauto_https off\n\tpersist_config off\n\tlog {\n\t\tlevel ERROR\n\t}\n}\n", admin)
	sites := make([]string, 4)
	for i := range sites {
		sites[i] = testkit.FreeAddr(t)
		rotate := ""
		if i == 1 {
			rotate = "\n\t\t\trotate_size 300"
		}
		fmt.Fprintf(&cf, "\nhttp://%s {\n\tllmtap {\n\t\trecord %s {\n\t\t\tfiles trace%s\n\t\t}\n\t}\n\treverse_proxy %s {\n\t\tflush_interval -1\n\t}\n}\n",
			sites[i], filepath.Join(root, fmt.Sprint("inst", i)), rotate, strings.TrimPrefix(mockURL, "http://"))
	}
	testkit.StartCaddyfile(t, "trace-merge", cf.String())
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	send := func(site string, body []byte) {
		resp, err := c.Post("http://"+site+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	const conversations, turns = 4, 4
	n := 0
	for k := range turns {
		for cv := range conversations {
			body := conversationTurn(cv, k)
			send(sites[3], body)   // the single instance sees everything
			send(sites[n%3], body) // the fleet: round-robin
			n++
		}
	}
	if err := caddy.Stop(); err != nil { // writes the recorders out
		t.Fatal(err)
	}

	single, _ := filepath.Glob(filepath.Join(root, "inst3", "trace-*.jsonl"))
	var fleet []string
	for i := range 3 {
		fs, _ := filepath.Glob(filepath.Join(root, fmt.Sprint("inst", i), "trace-*.jsonl"))
		fleet = append(fleet, fs...)
	}
	if len(single) != 1 || len(fleet) < 4 {
		t.Fatalf("trace files: single %v, fleet %v (instance 1 should have rotated)", single, fleet)
	}
	out := filepath.Join(root, "merged.jsonl")
	var stderr bytes.Buffer
	if code, err := traceMain(io.Discard, &stderr, append([]string{"merge", "-o", out}, fleet...)); code != 0 || err != nil {
		t.Fatalf("trace merge: %d %v\n%s", code, err, stderr.String())
	}
	merged, _, err := trace.ReadFile(out, trace.Options{Format: trace.FormatMooncake})
	if err != nil {
		t.Fatal(err)
	}
	alone, _, err := trace.ReadFile(single[0], trace.Options{Format: trace.FormatMooncake})
	if err != nil {
		t.Fatal(err)
	}
	trace.SortByTime(alone)
	if len(merged) != n || len(alone) != n {
		t.Fatalf("%d merged rows, %d single rows; want %d", len(merged), len(alone), n)
	}
	for _, r := range alone {
		for _, id := range r.HashIDs {
			if id < 0 || id >= 1<<53 {
				t.Errorf("recorded id %d outside [0, 2^53)", id)
			}
		}
	}
	distinct := map[int64]bool{}
	for i, r := range merged {
		if i > 0 && r.Timestamp < merged[i-1].Timestamp {
			t.Errorf("row %d at %v before row %d at %v", i, r.Timestamp, i-1, merged[i-1].Timestamp)
		}
		if r.InputLength != alone[i].InputLength || len(r.HashIDs) != len(alone[i].HashIDs) {
			t.Errorf("row %d: merged %d tokens/%d ids, single %d/%d: arrival order differs", i, r.InputLength, len(r.HashIDs), alone[i].InputLength, len(alone[i].HashIDs))
		}
		for _, id := range r.HashIDs {
			distinct[id] = true
		}
	}
	for id := range distinct {
		if id >= int64(len(distinct)) {
			t.Errorf("merged id %d with %d distinct ids: not dense", id, len(distinct))
			break
		}
	}
	got, blocks := prefixReuse(merged)
	want, _ := prefixReuse(alone)
	t.Logf("prefix reuse over %d blocks: merged %.4f, single instance %.4f", blocks, got, want)
	if want < 0.5 {
		t.Fatalf("the single recording reuses only %.2f of its blocks; the conversations should share more", want)
	}
	if got != want {
		t.Errorf("merged trace reuses %.4f of its blocks, a single instance %.4f", got, want)
	}
	if merged[0].Timestamp != 0 {
		t.Errorf("merged trace starts at %v, want 0", merged[0].Timestamp)
	}
	_ = os.Remove(out)
}

// TestTraceMergeNames: a file whose name does not give its start is refused, naming it.
func TestTraceMergeNames(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mine.jsonl")
	if err := os.WriteFile(p, []byte(`{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, err := traceMain(io.Discard, io.Discard, []string{"merge", p})
	if code != 1 || err == nil || !strings.Contains(err.Error(), "mine.jsonl") || !strings.Contains(err.Error(), "trace-<UTC start>.jsonl") {
		t.Errorf("merge of %s: %d %v", p, code, err)
	}
	for name, want := range map[string]string{
		"trace-20261201T211530.250Z.jsonl":   "2026-12-01T21:15:30.25Z",
		"trace-20261201T211530.250Z-2.jsonl": "2026-12-01T21:15:30.25Z",
	} {
		if at, err := traceFileStart("/x/" + name); err != nil || at.Format(time.RFC3339Nano) != want {
			t.Errorf("%s: start %v %v, want %s", name, at, err, want)
		}
	}
}
