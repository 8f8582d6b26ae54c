package commands

import (
	"bufio"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmtap/llmtap/telemetry/record"
)

// TestDemo runs the demo command in-process for two seconds and checks what it promises: a
// non-empty summary from the admin API, AIPerf exports, and one record per completed request,
// each with the metrics of a streamed response.
func TestDemo(t *testing.T) {
	dir := t.TempDir()
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	code, err := runDemo(fs, []string{"--duration", "2s", "--rate", "15", "--output", dir})
	if err != nil || code != 0 {
		t.Fatalf("demo exited %d: %v", code, err)
	}

	for _, name := range []string{"summary.json", "profile_export_aiperf.json", "profile_export_aiperf.csv", "records.jsonl"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("demo did not write %s: %v", name, err)
		}
		if st.Size() == 0 || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: size %d mode %v; want non-empty and 0600", name, st.Size(), st.Mode().Perm())
		}
	}

	f, err := os.Open(filepath.Join(dir, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, tokenized := 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r record.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("record %d: %v", n+1, err)
		}
		n++
		if r.Error != "" || r.TTFTMs == nil || r.ITLMs == nil || r.OutputTokens != 64 {
			t.Fatalf("record %d: error %q ttft %v itl %v output %d; want a clean 64-token stream",
				n, r.Error, r.TTFTMs, r.ITLMs, r.OutputTokens)
		}
		if r.OutputTokensSource == record.SourceTokenizer {
			tokenized++
		}
	}
	if n == 0 {
		t.Fatal("no records written")
	}
	// Every fifth request asks for no usage: its tokens must come from llmtap's tokenizer, and
	// the mock's words are one o200k token each, so the count above is still exactly 64.
	if tokenized == 0 {
		t.Fatalf("none of %d records counted its tokens with the tokenizer", n)
	}

	var doc struct {
		Summary struct {
			Groups []json.RawMessage `json:"groups"`
		} `json:"summary"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Summary.Groups) == 0 {
		t.Fatalf("summary.json has no groups (err %v): %.300s", err, raw)
	}
	var export map[string]struct {
		Avg   float64 `json:"avg"`
		Count int64   `json:"count"`
	}
	raw, err = os.ReadFile(filepath.Join(dir, "profile_export_aiperf.json"))
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(raw, &export) // non-metric keys (model, window) do not fit the shape
	if got := export["request_count"].Avg; int(got) != n {
		t.Fatalf("profile_export_aiperf.json request_count %v, want %d records", got, n)
	}
	if export["time_to_first_token"].Count != int64(n) {
		t.Fatalf("time_to_first_token count %d, want %d", export["time_to_first_token"].Count, n)
	}
}
