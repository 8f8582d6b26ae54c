package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
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
	_, mockURL := testkit.StartMock(t, mock.Config{Model: "rec-model", TTFT: time.Millisecond, ITL: time.Millisecond, Usage: mock.UsageAlways, Seed: 3})
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
		fmt.Fprintf(&cf, "\nhttp://%s {\n\tllmtap {\n\t\trecord %s {\n\t\t\tfiles trace records payloads%s\n\t\t}\n\t}\n\treverse_proxy %s {\n\t\tflush_interval -1\n\t}\n}\n",
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
	// Keyed ids are kept as the recorders wrote them: with one fleet key, the ids the single
	// instance wrote for the same prompts.
	single1 := map[int64]bool{}
	for _, r := range alone {
		for _, id := range r.HashIDs {
			single1[id] = true
		}
	}
	for id := range distinct {
		if !single1[id] {
			t.Errorf("merged id %d is not an id the single instance wrote", id)
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

	// Records and payloads merge alike: every line of the fleet's files once, in arrival order;
	// record lines byte for byte, payload lines rebased like the trace (their timestamps are
	// the merged trace's) with the rest of the line byte for byte.
	for _, kind := range []string{"records", "payloads"} {
		var files []string
		inputs := map[string]int{}
		for i := range 3 {
			fs, _ := filepath.Glob(filepath.Join(root, fmt.Sprint("inst", i), kind+"-*.jsonl"))
			files = append(files, fs...)
			for _, f := range fs {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
					if kind == "payloads" {
						l = l[strings.IndexByte(l, ','):] // after timestamp_ms
					}
					inputs[l]++
				}
			}
		}
		out := filepath.Join(root, "merged-"+kind+".jsonl")
		stderr.Reset()
		if code, err := traceMain(io.Discard, &stderr, append([]string{"merge", "-o", out}, files...)); code != 0 || err != nil {
			t.Fatalf("trace merge of %s: %d %v\n%s", kind, code, err, stderr.String())
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		t.Logf("merged %s: %d lines, %.0f bytes per line", kind, len(lines), float64(len(b))/float64(max(len(lines), 1)))
		if len(lines) != n {
			t.Fatalf("merged %s: %d lines, want %d", kind, len(lines), n)
		}
		var prev time.Time
		for i, l := range lines {
			var row struct {
				Start       time.Time `json:"start"`
				TimestampMs float64   `json:"timestamp_ms"`
				InputTokens int       `json:"input_tokens"`
			}
			if err := json.Unmarshal([]byte(l), &row); err != nil {
				t.Fatalf("merged %s line %d: %v", kind, i+1, err)
			}
			key := l
			switch kind {
			case "records":
				if row.Start.Before(prev) {
					t.Errorf("record %d starts at %v, before the one above (%v)", i, row.Start, prev)
				}
				prev = row.Start
			case "payloads":
				key = l[strings.IndexByte(l, ','):]
				if want := float64(merged[i].Timestamp.Microseconds()) / 1000; math.Abs(row.TimestampMs-want) > 0.002 {
					t.Errorf("payload %d at %v ms, the merged trace's row %d at %v ms", i, row.TimestampMs, i, want)
				}
			}
			if inputs[key] == 0 {
				t.Errorf("merged %s line %d is not a line of the inputs: %.200s", kind, i+1, l)
			}
			inputs[key]--
		}
	}
	if code, err := traceMain(io.Discard, io.Discard, []string{"merge", single[0], filepath.Join(root, "inst3", "x"+filepath.Base(single[0]))}); code != 1 || err == nil {
		t.Errorf("a merge of a trace file and a file of no known kind: %d %v", code, err)
	}
}

// TestTraceMergeNames: a file whose name does not give its start is refused, naming it.
func TestTraceMergeNames(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mine.jsonl")
	if err := os.WriteFile(p, []byte(`{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, err := traceMain(io.Discard, io.Discard, []string{"merge", p})
	if code != 1 || err == nil || !strings.Contains(err.Error(), "mine.jsonl") || !strings.Contains(err.Error(), "payloads-<UTC start>.jsonl") {
		t.Errorf("merge of %s: %d %v", p, code, err)
	}
	// Files of two kinds are refused, naming both.
	dir := t.TempDir()
	tr, rec := filepath.Join(dir, "trace-20261201T211530.250Z.jsonl"), filepath.Join(dir, "records-20261201T211530.250Z.jsonl")
	for _, f := range []string{tr, rec} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if code, err := traceMain(io.Discard, io.Discard, []string{"merge", tr, rec}); code != 1 || err == nil || !strings.Contains(err.Error(), "one kind") {
		t.Errorf("merge of a trace and a records file: %d %v", code, err)
	}
	if code, err := traceMain(io.Discard, io.Discard, []string{"merge", "--window", "0s", tr}); code != 2 || err == nil {
		t.Errorf("merge with a zero window: %d %v", code, err)
	}
}
