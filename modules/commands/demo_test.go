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

// TestDemoAIPerfFilesCountAIPerfsErrors runs the demo with HTTP 500s and streams that fail
// mid-way and checks that its AIPerf-named files count them as AIPerf does, while its own
// records keep llmtap's verdict: a 500 is an error in both; a stream that sent content before
// its error event is an error record for llmtap and a valid request for AIPerf (its parser
// skips the error event). AIPerf's own code then judges the files.
func TestDemoAIPerfFilesCountAIPerfsErrors(t *testing.T) {
	dir := t.TempDir()
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	code, err := runDemo(fs, []string{"--duration", "2s", "--rate", "40", "--output", dir,
		"--error-rate", "0.15", "--stream-error-rate", "0.2", "--seed", "7"})
	if err != nil || code != 0 {
		t.Fatalf("demo exited %d: %v", code, err)
	}
	f, err := os.Open(filepath.Join(dir, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n, http500, partial, empty int
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r record.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		n++
		switch {
		case r.Status != 200:
			http500++
		case r.ContentEvents == 0:
			empty++
		case r.Error == record.ErrStream:
			partial++
		}
	}
	if http500 == 0 || partial == 0 {
		t.Fatalf("%d records, %d HTTP 500, %d partial streams: the run must have both", n, http500, partial)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.json"))
	if err != nil {
		t.Fatal(err)
	}
	var export struct {
		RequestCount, ErrorRequestCount struct{ Avg float64 } `json:"-"`
		Errors                          []struct{ Count int } `json:"error_summary"`
		Cancelled                       *bool                 `json:"was_cancelled"`
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(raw, &export)
	json.Unmarshal(members["request_count"], &export.RequestCount)
	json.Unmarshal(members["error_request_count"], &export.ErrorRequestCount)
	if got, want := int(export.ErrorRequestCount.Avg), http500+empty; got != want {
		t.Errorf("error_request_count %d, want %d (%d HTTP 500, %d without content)", got, want, http500, empty)
	}
	if got, want := int(export.RequestCount.Avg), n-http500-empty; got != want {
		t.Errorf("request_count %d, want %d: the %d streams with content before their error event are valid in AIPerf", got, want, partial)
	}
	total := 0
	for _, e := range export.Errors {
		total += e.Count
	}
	if total != http500 || export.Cancelled == nil || members["input_config"] == nil {
		t.Errorf("error_summary counts %d, want the %d HTTP 500s; was_cancelled %v; input_config %s", total, http500, export.Cancelled, members["input_config"])
	}
	t.Run("AIPerf's own code", func(t *testing.T) {
		j := judgeAIPerf(t, dir)
		if j.CSVIdentical == nil || !*j.CSVIdentical || j.SummaryErrors == nil || int(*j.SummaryErrors) != http500+empty {
			t.Errorf("CSV identical %v, summary errors %v: want AIPerf's CSV and %d errors", j.CSVIdentical, j.SummaryErrors, http500+empty)
		}
	})
}
