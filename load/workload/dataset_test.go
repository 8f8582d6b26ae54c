package workload

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadDatasetRows reads each row shape AIPerf's custom datasets have and checks the
// conversations they make.
func TestReadDatasetRows(t *testing.T) {
	d, err := ReadDataset(strings.NewReader(`{"session_id": "s", "turns": [{"role": "system", "text": "Sys."}, {"text": "A", "delay": 900}, {"texts": ["B1", "B2"], "delay": 250.5, "output_length": 7, "extra": {"top_k": 3}}]}`+"\n"),
		"m.jsonl", DatasetMultiTurn)
	if err != nil {
		t.Fatal(err)
	}
	c := d.Conversations[0]
	if c.System != "Sys." || len(c.Turns) != 2 {
		t.Fatalf("conversation %+v: want the system turn hoisted and 2 turns", c)
	}
	if c.Turns[0].Delay != 0 || c.Turns[1].Delay != 250500*time.Microsecond || c.Turns[1].MaxTokens != 7 {
		t.Errorf("turns %+v: the first turn has no delay, the second 250.5 ms and output length 7", c.Turns)
	}
	if len(c.Turns[1].Texts) != 2 || len(c.Turns[1].Extra) != 1 || c.Turns[1].Extra[0].Key != "top_k" {
		t.Errorf("turn 2 %+v: want two texts and the extra member", c.Turns[1])
	}
	body, err := BodySpec{Endpoint: EndpointChat, Model: "m"}.TurnBody(&c, 1, []string{"reply A"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"system","content":"Sys."},{"role":"user","content":"A"},{"role":"assistant","content":"reply A"},{"role":"user","content":[{"type":"text","text":"B1"},{"type":"text","text":"B2"}]}],"stream":false,"max_completion_tokens":7,"top_k":3}`
	if string(body) != want {
		t.Errorf("body\n%s\nwant\n%s", body, want)
	}
	// The Anthropic API takes the system prompt in its own member; Ollama wants strings.
	body, _ = BodySpec{Endpoint: EndpointMessages, Model: "m"}.TurnBody(&c, 0, nil)
	if !strings.Contains(string(body), `"system":"Sys.","messages":[{"role":"user","content":"A"}]`) {
		t.Errorf("messages body %s", body)
	}
	body, _ = BodySpec{Endpoint: EndpointOllamaChat, Model: "m"}.TurnBody(&c, 1, nil)
	if !strings.Contains(string(body), `{"role":"user","content":"B1\nB2"}`) {
		t.Errorf("ollama body %s", body)
	}
}

// TestReadDatasetErrorsNameTheLine checks that every bad row is refused with file:line and
// what is wrong with it.
func TestReadDatasetErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		kind, rows, want string
	}{
		{DatasetSingleTurn, `{"text": "ok"}` + "\n" + `{"text": 1}`, "f.jsonl:2: json"},
		{DatasetSingleTurn, `{"text": "ok"}` + "\n\n" + `{"image": "a.png", "text": "x"}`, `f.jsonl:3: "image"`},
		{DatasetSingleTurn, `{"text": "x", "timestamp": 10}`, `f.jsonl:1: "timestamp"`},
		{DatasetSingleTurn, `{"text": "x", "delay": 10}`, `f.jsonl:1: "delay" in a single-turn row`},
		{DatasetSingleTurn, `{"text": "x", "texts": ["y"]}`, "f.jsonl:1: text and texts"},
		{DatasetSingleTurn, `{"role": "user"}`, "f.jsonl:1: no text"},
		{DatasetSingleTurn, `{"type": "multi_turn", "text": "x"}`, `f.jsonl:1: "type" "multi_turn"`},
		{DatasetSingleTurn, `{"text": "x", "extra": [1]}`, `f.jsonl:1: "extra"`},
		{DatasetSingleTurn, `{"text": "x", "output_length": -1}`, "f.jsonl:1: output_length -1"},
		{DatasetMultiTurn, `{"turns": []}`, "f.jsonl:1: no turns"},
		{DatasetMultiTurn, `{"turns": [{"text": "a"}, {"text": "b", "delay": -5}]}`, "f.jsonl:1: turn 1: delay -5"},
		{DatasetMultiTurn, `{"turns": [{"text": "a"}, {"text": "b", "delay": 1e12}]}`, "f.jsonl:1: turn 1: delay"},
		{DatasetMultiTurn, ``, "f.jsonl: no conversations"},
		{DatasetMultiTurn, `{"turns": [` + strings.Repeat(`{"text":"a"},`, MaxTurns) + `{"text":"a"}]}`, "f.jsonl:1: 1001 turns"},
		{"mooncake_trace", `{"input_length": 3}`, "llmtap replay"},
		{DatasetShareGPT, `{"conversations": []}`, "want a JSON array"},
		{DatasetShareGPT, `[{"conversations": 5}]`, "f.jsonl: entry 0"},
		{DatasetSingleTurn, `{"text": "` + strings.Repeat("a", MaxDatasetLine) + `"}`, "line 1"},
	} {
		_, err := ReadDataset(strings.NewReader(tc.rows), "f.jsonl", tc.kind)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %.60q: error %v, want one containing %q", tc.kind, tc.rows, err, tc.want)
		}
	}
}

// TestLoadDatasetBounds checks the file-level refusals: a folder and a missing file.
func TestLoadDatasetBounds(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadDataset(dir, DatasetSingleTurn, nil); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("a folder: %v", err)
	}
	if _, err := LoadDataset(filepath.Join(dir, "none.jsonl"), DatasetSingleTurn, nil); err == nil {
		t.Error("a missing file was read")
	}
	p := filepath.Join(dir, "pool.jsonl")
	os.WriteFile(p, []byte("{\"text\":\"a\"}\n{\"text\":\"b\"}\n"), 0o600)
	d, err := LoadDataset(p, DatasetRandomPool, nil)
	if err != nil || d.Kind != DatasetRandomPool {
		t.Fatalf("random pool: %v", err)
	}
	seen := map[string]bool{}
	for i := range 50 {
		seen[d.Conversation(i, 1).Turns[0].Text] = true
	}
	if len(seen) != 2 {
		t.Errorf("a random pool drew %v over 50 sessions, want both rows", seen)
	}
}

// FuzzReadDataset feeds the dataset reader arbitrary files of every type: it must return a
// dataset or an error, never panic, and every conversation it returns has 1 to MaxTurns turns
// whose bodies can be written.
func FuzzReadDataset(f *testing.F) {
	f.Add(`{"text": "a", "output_length": 3, "extra": {"k": 1}}`, 0)
	f.Add(`{"session_id": "s", "turns": [{"role": "system", "text": "s"}, {"texts": ["a", {"contents": ["b"]}], "delay": 5}]}`, 1)
	f.Add(`[{"conversations": [{"from": "human", "value": "hello there friend"}, {"from": "gpt", "value": "hi to you as well"}]}]`, 3)
	f.Fuzz(func(t *testing.T, data string, k int) {
		kind := DatasetTypes[uint(k)%uint(len(DatasetTypes))]
		d, err := ReadDataset(strings.NewReader(data), "fuzz", kind)
		if err != nil {
			return
		}
		for i := range d.Conversations {
			c := &d.Conversations[i]
			if len(c.Turns) < 1 || len(c.Turns) > MaxTurns {
				t.Fatalf("a conversation of %d turns", len(c.Turns))
			}
			body, err := BodySpec{Endpoint: EndpointChat, Model: "m"}.TurnBody(c, len(c.Turns)-1, nil)
			if err != nil || !json.Valid(body) {
				t.Fatalf("turn body %s: %v", body, err)
			}
		}
	})
}
