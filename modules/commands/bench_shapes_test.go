package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/load/bench"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// loggedMock serves the fast mock behind a body log: what arrived, in order, with the bodies.
func loggedMock(t *testing.T) (*BodyLog, string) {
	t.Helper()
	srv, err := mock.New(fastMock())
	if err != nil {
		t.Fatal(err)
	}
	log := &BodyLog{Next: srv}
	return log, "http://" + testkit.Serve(t, log)
}

// logged is one logged request, its body decoded.
type logged struct {
	BodyEntry
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
	Temperature         any `json:"temperature"`
	text                []string
	reply               string
}

// entries waits until every logged response is complete (the handler returns just after the
// client read its end) and decodes the bodies.
func loggedEntries(t *testing.T, log *BodyLog) []logged {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var es []BodyEntry
	for {
		es = log.Entries()
		if !slices.ContainsFunc(es, func(e BodyEntry) bool { return e.LastWrite.IsZero() }) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	out := make([]logged, len(es))
	for i, e := range es {
		out[i].BodyEntry = e
		if err := json.Unmarshal(e.Body, &out[i]); err != nil {
			t.Fatalf("request %d: %v: %s", i, err, e.Body)
		}
		for _, m := range out[i].Messages {
			var s string
			if json.Unmarshal(m.Content, &s) != nil {
				s = string(m.Content)
			}
			out[i].text = append(out[i].text, s)
		}
		out[i].reply = bench.ReplyText(e.Path, "text/event-stream", e.Response)
	}
	return out
}

// bySession groups the requests by X-Correlation-Id, in arrival order.
func bySession(es []logged) map[string][]logged {
	m := map[string][]logged{}
	for _, e := range es {
		m[e.CorrelationID] = append(m[e.CorrelationID], e)
	}
	return m
}

// TestBenchConversationsAtTheServer runs synthetic multi-turn conversations and checks what the
// server received: each conversation's turns in order under one X-Correlation-Id, each turn
// carrying every earlier turn followed by the text the server answered to it (AIPerf's
// context), and each turn sent no sooner than the turn delay after the previous response's
// last byte was written.
func TestBenchConversationsAtTheServer(t *testing.T) {
	log, url := loggedMock(t)
	dir := t.TempDir()
	const delay = 120 * time.Millisecond
	code, out, res, _ := runBenchArgs(t, "--url", url, "--model", "mock-model", "--concurrency", "2",
		"--conversation-num", "3", "--conversation-turn-mean", "3", "--conversation-turn-delay-mean", "120",
		"--request-count", "9", "--isl", "20", "--osl", "6", "--artifact-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	es := loggedEntries(t, log)
	if len(es) != 9 || res.Lines != 9 {
		t.Fatalf("the server saw %d requests, the export has %d lines: want 9", len(es), res.Lines)
	}
	// The export names each request's conversation and turn, as AIPerf's metadata does.
	perTurn := map[string]int{}
	for _, l := range readLines(t, filepath.Join(dir, "profile_export.jsonl")) {
		meta, _ := l["metadata"].(map[string]any)
		ti, ok := meta["turn_index"].(float64)
		if !ok || meta["x_correlation_id"] == nil || meta["conversation_id"] != meta["x_correlation_id"] {
			t.Fatalf("export metadata %v: want x_correlation_id, conversation_id and turn_index", meta)
		}
		perTurn[fmt.Sprint(meta["conversation_id"], "/", ti)]++
	}
	if len(perTurn) != 9 {
		t.Errorf("export turns %v: want turns 0, 1 and 2 of 3 conversations", perTurn)
	}
	sessions := bySession(es)
	if len(sessions) != 3 {
		t.Fatalf("%d correlation ids, want 3 conversations: %v", len(sessions), slices.Collect(mapsKeys(sessions)))
	}
	firsts := map[string]bool{}
	for id, turns := range sessions {
		if id == "" || len(turns) != 3 {
			t.Fatalf("session %q: %d turns, want 3", id, len(turns))
		}
		firsts[turns[0].text[0]] = true
		for k, tr := range turns {
			if len(tr.Messages) != 2*k+1 {
				t.Fatalf("session %s turn %d: %d messages, want %d (the turn after %d turns and replies)", id, k, len(tr.Messages), 2*k+1, k)
			}
			for i, m := range tr.Messages {
				want := "user"
				if i%2 == 1 {
					want = "assistant"
				}
				if m.Role != want {
					t.Errorf("session %s turn %d message %d: role %q, want %q", id, k, i, m.Role, want)
				}
			}
			if k == 0 {
				continue
			}
			prev := turns[k-1]
			if !slices.Equal(tr.text[:2*k-1], prev.text) {
				t.Errorf("session %s turn %d does not repeat turn %d's messages", id, k, k-1)
			}
			if prev.reply == "" || tr.text[2*k-1] != prev.reply {
				t.Errorf("session %s turn %d: assistant message %q, want the server's reply to turn %d %q", id, k, tr.text[2*k-1], k-1, prev.reply)
			}
			if gap := tr.Arrived.Sub(prev.LastWrite); gap < delay {
				t.Errorf("session %s turn %d arrived %v after turn %d's last byte was written, want ≥ %v", id, k, gap, k-1, delay)
			}
		}
	}
	if len(firsts) != 3 {
		t.Errorf("%d distinct first prompts over 3 conversations", len(firsts))
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestBenchSharedPrefixAtTheServer checks AIPerf's KV-cache prompt shapes as the server sees
// them: one prefix prompt before every conversation's first prompt (then each prompt its own),
// and a shared system prompt identical in every request with a user context that is the same
// within a conversation and different across them.
func TestBenchSharedPrefixAtTheServer(t *testing.T) {
	t.Run("prefix pool", func(t *testing.T) {
		log, url := loggedMock(t)
		code, out, _, _ := runBenchArgs(t, "--url", url, "--model", "mock-model", "--concurrency", "2",
			"--conversation-num", "6", "--request-count", "6", "--isl", "30", "--osl", "4",
			"--num-prefix-prompts", "1", "--prefix-prompt-length", "40", "--artifact-dir", t.TempDir())
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		es := loggedEntries(t, log)
		if len(es) != 6 {
			t.Fatalf("%d requests, want 6", len(es))
		}
		prefix := es[0].text[0]
		for _, e := range es[1:] {
			prefix = commonPrefix(prefix, e.text[0])
		}
		n, _ := tokens.Count([]byte(prefix))
		if n < 38 || n > 41 {
			t.Errorf("the prompts share %d leading tokens (%q), want the 40-token prefix", n, prefix)
		}
		seen := map[string]bool{}
		for _, e := range es {
			seen[e.text[0]] = true
		}
		if len(seen) != 6 {
			t.Errorf("%d distinct prompts of 6: after the prefix each prompt is its own", len(seen))
		}
	})
	t.Run("system and user context", func(t *testing.T) {
		log, url := loggedMock(t)
		code, out, _, _ := runBenchArgs(t, "--url", url, "--model", "mock-model", "--concurrency", "3",
			"--conversation-num", "3", "--conversation-turn-mean", "2", "--request-count", "6", "--isl", "10", "--osl", "4",
			"--shared-system-prompt-length", "50", "--user-context-prompt-length", "25", "--artifact-dir", t.TempDir())
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		es := loggedEntries(t, log)
		contexts := map[string]bool{}
		for id, turns := range bySession(es) {
			for _, e := range turns {
				if e.Messages[0].Role != "system" || e.text[0] != es[0].text[0] {
					t.Errorf("session %s: first message %s %q, want the shared system prompt", id, e.Messages[0].Role, e.text[0])
				}
				if e.Messages[1].Role != "user" || e.text[1] != turns[0].text[1] {
					t.Errorf("session %s: second message is not the session's user context", id)
				}
			}
			contexts[turns[0].text[1]] = true
			if n, _ := tokens.Count([]byte(turns[0].text[0])); n != 50 {
				t.Errorf("system prompt of %d tokens, want 50", n)
			}
		}
		if len(contexts) != 3 {
			t.Errorf("%d distinct user contexts over 3 conversations", len(contexts))
		}
	})
}

func commonPrefix(a, b string) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n]
}

// TestBenchUserCentricAtTheServer runs AIPerf's user-centric rate (4 users, 20 req/s: a turn
// gap of 200 ms) and checks at the server that each user's turns are a gap apart, and that the
// users start in AIPerf's steady state: with 3-turn conversations, the virtual history leaves
// the first users 3, 1, 1 and 2 turns, and later users all of theirs, cut at the request count.
func TestBenchUserCentricAtTheServer(t *testing.T) {
	log, url := loggedMock(t)
	code, out, _, spec := runBenchArgs(t, "--url", url, "--model", "mock-model",
		"--user-centric-rate", "20", "--num-users", "4", "--conversation-turn-mean", "3",
		"--conversation-num", "8", "--request-count", "12", "--isl", "10", "--osl", "4", "--artifact-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if spec.Info.Mode != "user_centric_rate20" {
		t.Errorf("mode %q, want user_centric_rate20 (the artifact folder's name)", spec.Info.Mode)
	}
	es := loggedEntries(t, log)
	if len(es) != 12 {
		t.Fatalf("%d requests, want 12", len(es))
	}
	sessions := bySession(es)
	var turns []int
	for s := range len(sessions) {
		turns = append(turns, len(sessions["conv-"+strconv.Itoa(s)]))
	}
	if want := []int{3, 1, 1, 2, 3, 2}; !slices.Equal(turns, want) {
		t.Errorf("turns per user %v, want %v", turns, want)
	}
	const gap, slack = 200 * time.Millisecond, 50 * time.Millisecond
	// Users start 1/rate = 50 ms apart; the first replacements at 0.05 s + 1 gap and 0.1 s + 1
	// gap (the users left one turn each).
	start := sessions["conv-0"][0].Arrived
	for s, at := range map[int]time.Duration{1: 50 * time.Millisecond, 2: 100 * time.Millisecond, 3: 150 * time.Millisecond, 4: 250 * time.Millisecond, 5: 300 * time.Millisecond} {
		if d := sessions["conv-"+strconv.Itoa(s)][0].Arrived.Sub(start); d < at-slack/2 {
			t.Errorf("user %d started %v after user 0, want about %v", s, d, at)
		}
	}
	for id, ts := range sessions {
		for k := 1; k < len(ts); k++ {
			if d := ts[k].Arrived.Sub(ts[k-1].Arrived); d < gap-slack {
				t.Errorf("user %s: turn %d arrived %v after turn %d, want about the %v gap", id, k, d, k-1, gap)
			}
		}
	}
}

// TestBenchDatasetsAtTheServer sends AIPerf's custom datasets and a ShareGPT file and checks
// that the server received each row's text verbatim, with its output length and extra members,
// multi-turn sessions in order with their delays.
func TestBenchDatasetsAtTheServer(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("single_turn", func(t *testing.T) {
		log, url := loggedMock(t)
		f := write("single.jsonl", `{"text": "What is a prefix cache?", "output_length": 5}
{"texts": ["First part.", "Second part."], "extra": {"temperature": 0.25}}

{"type": "single_turn", "texts": [{"name": "t", "contents": ["Only text."]}]}
`)
		code, out, _, _ := runBenchArgs(t, "--url", url, "--model", "mock-model", "--concurrency", "1",
			"--input-file", f, "--custom-dataset-type", "single_turn", "--request-count", "3", "--artifact-dir", t.TempDir())
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		es := loggedEntries(t, log)
		if len(es) != 3 {
			t.Fatalf("%d requests, want 3", len(es))
		}
		if es[0].text[0] != "What is a prefix cache?" || es[0].MaxCompletionTokens != 5 {
			t.Errorf("row 1 logged as %q with max_completion_tokens %d", es[0].text[0], es[0].MaxCompletionTokens)
		}
		if want := `[{"type":"text","text":"First part."},{"type":"text","text":"Second part."}]`; es[1].text[0] != want || es[1].Temperature != 0.25 {
			t.Errorf("row 2 logged as %s, temperature %v", es[1].text[0], es[1].Temperature)
		}
		if es[2].text[0] != "Only text." {
			t.Errorf("row 4 logged as %q", es[2].text[0])
		}
	})
	t.Run("multi_turn", func(t *testing.T) {
		log, url := loggedMock(t)
		f := write("multi.jsonl", `{"session_id": "a", "turns": [{"role": "system", "text": "Be brief."}, {"text": "Hello?"}, {"text": "And then?", "delay": 150}]}
{"session_id": "b", "turns": [{"text": "One."}, {"text": "Two.", "delay": 100}, {"text": "Three.", "delay": 100}]}
`)
		code, out, _, _ := runBenchArgs(t, "--url", url, "--model", "mock-model", "--concurrency", "2",
			"--input-file", f, "--custom-dataset-type", "multi_turn", "--request-count", "5", "--osl", "4", "--artifact-dir", t.TempDir())
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		es := loggedEntries(t, log)
		if len(es) != 5 {
			t.Fatalf("%d requests, want 5", len(es))
		}
		var a, b []logged
		for _, ts := range bySession(es) {
			if len(ts) == 2 {
				a = ts
			} else {
				b = ts
			}
		}
		if len(a) != 2 || len(b) != 3 {
			t.Fatalf("sessions of %d and %d turns, want 2 and 3", len(a), len(b))
		}
		if want := []string{"Be brief.", "Hello?", a[0].reply, "And then?"}; !slices.Equal(a[1].text, want) || a[1].Messages[0].Role != "system" {
			t.Errorf("session a turn 2 sent %q, want %q", a[1].text, want)
		}
		if want := []string{"One.", b[0].reply, "Two.", b[1].reply, "Three."}; !slices.Equal(b[2].text, want) {
			t.Errorf("session b turn 3 sent %q, want %q", b[2].text, want)
		}
		for _, c := range []struct {
			ts    []logged
			k     int
			delay time.Duration
		}{{a, 1, 150 * time.Millisecond}, {b, 1, 100 * time.Millisecond}, {b, 2, 100 * time.Millisecond}} {
			if d := c.ts[c.k].Arrived.Sub(c.ts[c.k-1].LastWrite); d < c.delay {
				t.Errorf("turn %d arrived %v after the previous response, want ≥ %v", c.k, d, c.delay)
			}
		}
	})
	t.Run("sharegpt", func(t *testing.T) {
		log, url := loggedMock(t)
		f := write("sharegpt.json", `[
 {"id": "x", "conversations": [{"from": "human", "value": "Tell me about the rabbit hole, please."}, {"from": "gpt", "value": "It went straight on like a tunnel for some way."}]},
 {"id": "too short", "conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello there, how are you today?"}]},
 {"id": "one message", "conversations": [{"from": "human", "value": "Anyone?"}]}
]`)
		code, out, _, _ := runBenchArgs(t, "--url", url, "--model", "mock-model", "--concurrency", "1",
			"--public-dataset", "sharegpt", "--input-file", f, "--request-count", "2", "--artifact-dir", t.TempDir())
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		es := loggedEntries(t, log)
		want, _ := tokens.Count([]byte("It went straight on like a tunnel for some way."))
		for _, e := range es {
			if e.text[0] != "Tell me about the rabbit hole, please." || e.MaxCompletionTokens != want {
				t.Errorf("sent %q with max_completion_tokens %d, want the one kept entry's prompt and %d", e.text[0], e.MaxCompletionTokens, want)
			}
		}
	})
	t.Run("bad rows", func(t *testing.T) {
		f := write("bad.jsonl", "{\"text\": \"fine\"}\n{\"text\": \"img\", \"image\": \"x.png\"}\n")
		code, _, _, _ := runBenchArgs(t, "--url", "http://127.0.0.1:1", "--model", "m", "--concurrency", "1",
			"--input-file", f, "--custom-dataset-type", "single_turn")
		if code != 2 {
			t.Errorf("exit %d for a dataset with an image row, want 2", code)
		}
	})
}

// TestBenchConcurrencyHoldsSessions checks AIPerf's session concurrency: with --concurrency 1
// a conversation holds the slot from its first turn to its last, so the server sees one
// conversation's turns, then the next one's, never interleaved.
func TestBenchConcurrencyHoldsSessions(t *testing.T) {
	log, url := loggedMock(t)
	code, out, _, _ := runBenchArgs(t, "--url", url, "--model", "mock-model", "--concurrency", "1",
		"--conversation-num", "3", "--conversation-turn-mean", "3", "--request-count", "9",
		"--isl", "10", "--osl", "4", "--artifact-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var order []string
	for _, e := range loggedEntries(t, log) {
		order = append(order, e.CorrelationID)
	}
	want := []string{"conv-0", "conv-0", "conv-0", "conv-1", "conv-1", "conv-1", "conv-2", "conv-2", "conv-2"}
	if !slices.Equal(order, want) {
		t.Errorf("arrival order %v, want %v", order, want)
	}
}

// TestBenchShapeFlagErrors checks that each misuse of the shape flags stops bench before it
// sends anything, with exit code 2 and an error that names the flag.
func TestBenchShapeFlagErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.jsonl")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--user-centric-rate", "5", "--conversation-turn-mean", "3"}, "--num-users"},
		{[]string{"--user-centric-rate", "5", "--num-users", "2"}, "mean of 1 turns"},
		{[]string{"--user-centric-rate", "5", "--num-users", "2", "--request-rate", "3", "--conversation-turn-mean", "3"}, "different modes"},
		{[]string{"--num-users", "2", "--concurrency", "1"}, "--user-centric-rate 0"},
		{[]string{"--user-centric-rate", "5", "--num-users", "2", "--concurrency", "1", "--conversation-turn-mean", "3"}, "--concurrency is not supported"},
		{[]string{"--concurrency", "1", "--conversation-turn-mean", "0"}, "--conversation-turn-mean 0"},
		{[]string{"--concurrency", "1", "--conversation-num", "0"}, "--conversation-num 0"},
		{[]string{"--concurrency", "1", "--conversation-turn-mean", "2000"}, "--conversation-turn-mean 2000"},
		{[]string{"--concurrency", "1", "--conversation-turn-delay-mean", "-1"}, "--conversation-turn-delay-mean -1"},
		{[]string{"--concurrency", "1", "--prefix-prompt-length", "10", "--shared-system-prompt-length", "10"}, "mutually exclusive"},
		{[]string{"--concurrency", "1", "--input-file", missing}, "--custom-dataset-type"},
		{[]string{"--concurrency", "1", "--public-dataset", "aimo", "--input-file", missing}, "only sharegpt"},
		{[]string{"--concurrency", "1", "--input-file", missing, "--custom-dataset-type", "single_turn", "--conversation-turn-mean", "2"}, "not with --input-file"},
		{[]string{"--concurrency", "1", "--input-file", missing, "--custom-dataset-type", "single_turn"}, "none.jsonl"},
		{[]string{"--concurrency", "1", "--conversation-turn-mean", "2", "--worker-count", "2", "--worker-index", "0", "--concurrency", "2"}, "--worker-count"},
	} {
		var out, errOut bytes.Buffer
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		fs.SetOutput(&errOut)
		args := append([]string{"--url", "http://127.0.0.1:1", "--model", "m", "--artifact-dir", t.TempDir()}, tc.args...)
		code, err := benchMain(context.Background(), &out, &errOut, false, fs, args, nil)
		if code != 2 || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: exit %d, error %v; want 2 and an error naming %q", tc.args, code, err, tc.want)
		}
	}
}

// TestBenchConversationsStopAtTheDuration checks that a conversation sends no turn after
// --benchmark-duration (AIPerf issues no credit then): with 100 ms between turns, a 0.5 s run
// can start at most 6 turns, where a session left to go on through the grace period would
// send dozens.
func TestBenchConversationsStopAtTheDuration(t *testing.T) {
	log, url := loggedMock(t)
	code, out, _, _ := runBenchArgs(t, "--url", url, "--model", "mock-model", "--concurrency", "1",
		"--conversation-turn-mean", "50", "--conversation-turn-delay-mean", "100", "--benchmark-duration", "0.5",
		"--benchmark-grace-period", "3", "--isl", "10", "--osl", "2", "--artifact-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if n := len(log.Entries()); n < 1 || n > 6 {
		t.Errorf("%d requests in a 0.5 s run with 100 ms between turns, want 1 to 6", n)
	}
}

// TestBenchConversationNumIsASessionCount checks AIPerf's session stop condition: with
// --conversation-num alone the run sends that many conversations whole (not the default 10
// requests), and with --request-count too, whichever comes first.
func TestBenchConversationNumIsASessionCount(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--conversation-num", "4", "--conversation-turn-mean", "3"}, 12},
		{[]string{"--conversation-num", "4", "--conversation-turn-mean", "3", "--request-count", "7"}, 7},
		{[]string{"--conversation-num", "2", "--conversation-turn-mean", "3", "--request-count", "20"}, 6},
	} {
		log, url := loggedMock(t)
		args := append([]string{"--url", url, "--model", "mock-model", "--concurrency", "2", "--isl", "10", "--osl", "2",
			"--artifact-dir", t.TempDir()}, tc.args...)
		code, out, _, _ := runBenchArgs(t, args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if n := len(log.Entries()); n != tc.want {
			t.Errorf("%v: %d requests, want %d", tc.args, n, tc.want)
		}
	}
}
