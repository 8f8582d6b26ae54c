package commands

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/format/trace"
)

// sharedTraces is the folder of published traces the repository carries (testdata/README.md).
const sharedTraces = "../../testdata/traces"

// sharedTrace returns the path of a carried trace; a missing one fails the test.
func sharedTrace(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(sharedTraces, rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("trace missing from the repository's testdata: %v", err)
	}
	return p
}

func runTraceCmd(t *testing.T, args ...string) (code int, stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	code, err = traceMain(&out, &errOut, args)
	return code, out.String(), errOut.String(), err
}

func TestTraceStatsTable(t *testing.T) {
	path := sharedTrace(t, "azure2023/AzureLLMInferenceTrace_code.csv")
	code, out, _, err := runTraceCmd(t, "stats", path)
	if code != 0 || err != nil {
		t.Fatalf("code %d, err %v", code, err)
	}
	// The README's reference figures for this trace, as the table prints them.
	for _, want := range []string{path + " (azure)", "requests", "8819", "2.566 req/s", "13.15", "p50 1469", "p99 7436", "p50 13", "n/a"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestTraceStatsJSON(t *testing.T) {
	conv := sharedTrace(t, "mooncake/conversation_trace.jsonl")
	burst := sharedTrace(t, "burstgpt/BurstGPT_1_head400.csv")
	code, out, _, err := runTraceCmd(t, "stats", "--json", conv, burst)
	if code != 0 || err != nil {
		t.Fatalf("code %d, err %v", code, err)
	}
	var got []struct {
		File   string `json:"file"`
		Format string `json:"format"`
		trace.Summary
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got) != 2 || got[0].Format != "mooncake" || got[1].Format != "burstgpt" {
		t.Fatalf("want one entry per file in order: %+v", got)
	}
	if got[0].Requests != 12031 || math.Abs(got[0].PrefixReuse-0.366) > 0.0005 || got[0].DistinctTimestamps != 1180 {
		t.Errorf("conversation trace: %+v; README: 12,031 requests, 36.6 %% reuse, 1,180 timestamps", got[0].Summary)
	}
	if got[1].Failures != 17 {
		t.Errorf("BurstGPT_1 head: %d failures, want 17 zero-response rows", got[1].Failures)
	}
}

func TestTraceConvertAzure(t *testing.T) {
	in := sharedTrace(t, "azure2023/AzureLLMInferenceTrace_code.csv")
	out := filepath.Join(t.TempDir(), "code.jsonl")
	// An existing, world-readable file must come out 0600 all the same.
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr, err := runTraceCmd(t, "convert", "--from", "azure", "--to", "mooncake", in, out)
	if code != 0 || err != nil {
		t.Fatalf("code %d, err %v, stderr %s", code, err, stderr)
	}
	if !strings.Contains(stderr, "8819 requests") || !strings.Contains(stderr, "8819 given synthetic hash ids") {
		t.Errorf("summary line: %s", stderr)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("output mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	orig, _, err := trace.ReadFile(in, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	back, info, err := trace.ReadFile(out, trace.Options{})
	if err != nil || info.Format != trace.FormatMooncake || len(back) != len(orig) {
		t.Fatalf("read back: %v, %s, %d of %d", err, info.Format, len(back), len(orig))
	}
	for i := range orig {
		if back[i].Timestamp != orig[i].Timestamp || back[i].InputLength != orig[i].InputLength ||
			back[i].OutputLength != orig[i].OutputLength || len(back[i].HashIDs) != trace.Blocks(orig[i].InputLength, 512) {
			t.Fatalf("request %d: %+v → %+v", i, orig[i], back[i])
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// TestTraceConvertRecords converts llmtap records, written in completion order: the output
// must be in arrival order and start at zero, with failures kept.
func TestTraceConvertRecords(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "records.jsonl")
	lines := `{"request_id":"a","start":"2025-01-01T00:00:02Z","input_tokens":600,"output_tokens":5,"error":""}
{"request_id":"b","start":"2025-01-01T00:00:01.5Z","input_tokens":100,"output_tokens":0,"error":"http_status"}
{"request_id":"c","start":"2025-01-01T00:00:03Z","input_tok`
	if err := os.WriteFile(in, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr, err := runTraceCmd(t, "convert", "--to", "mooncake", in, "-")
	if code != 0 || err != nil {
		t.Fatalf("code %d, err %v", code, err)
	}
	want := `{"timestamp": 0, "input_length": 100, "output_length": 0, "hash_ids": [0]}
{"timestamp": 500, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}
`
	if stdout != want {
		t.Errorf("got\n%s\nwant\n%s", stdout, want)
	}
	if !strings.Contains(stderr, "torn last line 3 ignored") {
		t.Errorf("the torn line is not reported: %s", stderr)
	}
}

func TestTraceCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.0319600,abc,8\n"), 0o600)
	cases := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no subcommand", nil, 2, "missing subcommand"},
		{"unknown subcommand", []string{"replay"}, 2, `unknown subcommand "replay"`},
		{"stats without files", []string{"stats"}, 2, "no trace file"},
		{"bad format flag", []string{"stats", "--format", "parquet", bad}, 2, "unknown trace format"},
		{"corrupt file", []string{"stats", bad}, 1, bad + `:3: ContextTokens: "abc" is not an integer`},
		{"missing file", []string{"stats", filepath.Join(dir, "nope")}, 1, "no such file"},
		{"convert to csv", []string{"convert", "--to", "csv", bad, filepath.Join(dir, "o")}, 2, "only mooncake"},
		{"convert one arg", []string{"convert", "--to", "mooncake", bad}, 2, "want IN and OUT"},
	}
	for _, tc := range cases {
		code, _, _, err := runTraceCmd(t, tc.args...)
		if code != tc.code || err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: code %d, err %v; want code %d and %q", tc.name, code, err, tc.code, tc.err)
		}
	}
	// A failed conversion leaves no output behind.
	if _, err := os.Stat(filepath.Join(dir, "o")); err == nil {
		t.Error("a failed convert created its output")
	}
	code, _, _, _ := runTraceCmd(t, "convert", "--to", "mooncake", bad, filepath.Join(dir, "out.jsonl"))
	if _, err := os.Stat(filepath.Join(dir, "out.jsonl")); code != 1 || err == nil {
		t.Errorf("convert of a corrupt file: code %d, output exists: %v", code, err == nil)
	}
}
