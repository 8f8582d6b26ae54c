package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/telemetry/record"
)

// TestLoadAIPerfExample reads the files AIPerf itself wrote (its example artifacts, the older
// layout: metadata.timestamp_ns, metric tags ttft/ttst, summary under records{}).
func TestLoadAIPerfExample(t *testing.T) {
	t.Parallel()
	run, err := Load("testdata/aiperf-run1")
	if err != nil {
		t.Fatal(err)
	}
	if !run.AIPerf || run.ExportedRequests != 89 || len(run.Records) != 40 || run.Skipped != 0 {
		t.Fatalf("AIPerf %v, exported request_count %v, %d records, %d skipped (%v); want an AIPerf run, 89, 40, 0",
			run.AIPerf, run.ExportedRequests, len(run.Records), run.Skipped, run.Warnings)
	}
	cancelled := 0
	var r *record.Record
	for _, rec := range run.Records {
		if rec.Model != "openai/gpt-oss-20b" || rec.Class != record.ClassBench {
			t.Fatalf("record of model %q class %q: want the summary's model and class bench", rec.Model, rec.Class)
		}
		if rec.Error == record.ErrCanceled && rec.Status == 499 {
			cancelled++
		}
		if rec.RequestID == "1ed40a0d-e708-434d-bb8e-fb1b44cb8717" {
			r = rec
		}
	}
	if cancelled != 11 {
		t.Errorf("%d cancelled records, want AIPerf's 11 (code 499)", cancelled)
	}
	if r == nil {
		t.Fatal("request 1ed40a0d… not read")
	}
	// The line's own values: ttft 1680.543782 ms, OSL 193 = 61 output + 132 reasoning.
	if r.TTFTMs == nil || *r.TTFTMs != 1680.543782 || r.OutputTokens != 193 || r.ReasoningTokens != 132 ||
		r.InputTokens != 550 || r.RequestLatencyMs == nil || *r.RequestLatencyMs != 7936.968269 || len(r.InterChunkMs) == 0 {
		t.Errorf("record %+v", r)
	}
}

// TestLoadLlmtapRuns reads llmtap bench runs in the layout written before the exports followed
// AIPerf's models (error as a class string) and after (error_class, error as AIPerf's object).
func TestLoadLlmtapRuns(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"testdata/llmtap-before", "testdata/llmtap-aiperf-layout"} {
		run, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		failed := 0
		for _, r := range run.Records {
			if r.Error == record.ErrHTTP && r.Status == 500 {
				failed++
			} else if r.Error != "" || r.Model != "mock-model" {
				t.Errorf("%s: record error %q model %q", dir, r.Error, r.Model)
			}
		}
		if run.AIPerf || len(run.Records) != 6 || failed != 4 || run.Skipped != 0 {
			t.Errorf("%s: AIPerf %v, %d records, %d HTTP 500s, %d skipped %v; want a llmtap run of 6 with 4",
				dir, run.AIPerf, len(run.Records), failed, run.Skipped, run.Warnings)
		}
		if run.ExportedRequests != 2 {
			t.Errorf("%s: exported request_count %v, want 2", dir, run.ExportedRequests)
		}
	}
}

// FuzzParseRecordLine: any line is a record or a reason to skip it, never a panic, and a
// record always has a start time and a class.
func FuzzParseRecordLine(f *testing.F) {
	for _, dir := range []string{"testdata/aiperf-run1", "testdata/llmtap-before", "testdata/llmtap-aiperf-layout"} {
		b, err := os.ReadFile(filepath.Join(dir, "profile_export.jsonl"))
		if err != nil {
			f.Fatal(err)
		}
		for i, l := range bytes.Split(b, []byte("\n")) {
			if i < 3 && len(l) < 4096 {
				f.Add(l)
			}
		}
	}
	f.Add([]byte(`{"metadata":{"timestamp_ns":1,"credit_phase":"warmup"},"metrics":{}}`))
	f.Add([]byte(`{"metadata":{"request_start_ns":5},"metrics":{"output_token_count":{"value":[1,2],"unit":"tokens"}},"error":{"code":-3}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, _, why := aiperf.ParseLine(line, "m")
		if r == nil {
			return
		}
		if why != "" || r.Start.IsZero() || r.Class == "" {
			t.Fatalf("record %+v with reason %q", r, why)
		}
	})
}

// TestLoadAIPerfCurrentLayout reads lines in the layout of the AIPerf commit the exports follow
// (metadata.request_start_ns, benchmark_phase; time_to_first_token; error objects), with the
// summary's metrics as top-level members: llmtap's bench lines stripped to AIPerf's members.
func TestLoadAIPerfCurrentLayout(t *testing.T) {
	t.Parallel()
	src := "testdata/llmtap-aiperf-layout"
	b, err := os.ReadFile(filepath.Join(src, "profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out bytes.Buffer
	lines := 0
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var full map[string]json.RawMessage
		if err := json.Unmarshal(l, &full); err != nil {
			t.Fatal(err)
		}
		only, _ := json.Marshal(map[string]json.RawMessage{"metadata": full["metadata"], "metrics": full["metrics"], "error": full["error"]})
		out.Write(append(only, '\n'))
		lines++
	}
	os.WriteFile(filepath.Join(dir, "profile_export.jsonl"), out.Bytes(), 0o600)
	sum, _ := os.ReadFile(filepath.Join(src, "profile_export_aiperf.json"))
	os.WriteFile(filepath.Join(dir, "profile_export_aiperf.json"), sum, 0o600)

	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.AIPerf || len(run.Records) != lines || run.ExportedRequests != 2 {
		t.Fatalf("AIPerf %v, %d records of %d lines, exported request_count %v", run.AIPerf, len(run.Records), lines, run.ExportedRequests)
	}
	ok, failed := 0, 0
	for _, r := range run.Records {
		switch {
		case r.Error == record.ErrHTTP && r.Status == 500:
			failed++
		case r.Error == "" && r.TTFTMs != nil && r.OutputTokens == 4 && r.ReasoningTokens == 2 && r.Model == "mock-model":
			ok++
		default:
			t.Errorf("record %+v", r)
		}
	}
	if ok != 2 || failed != 4 {
		t.Errorf("%d valid and %d failed records, want 2 and 4", ok, failed)
	}
}
