package aiperf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmtap/llmtap/telemetry/stats"
)

// TestReadSummaryBothLayouts reads the summary a run writes (metrics as top-level members,
// beside input_config and llmtap's additions, which are not metrics) and one in the older
// layout of AIPerf's example artifacts (metrics under records{}, with nulls), and no summary.
func TestReadSummaryBothLayouts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := Export{Group: stats.GroupSummary{
		Metrics: map[string]stats.Stat{stats.TagTTFT: {Unit: "ms", Avg: 12.5, P99: 30, Count: 7}},
		Scalars: map[string]stats.Scalar{stats.TagRequestCount: {Unit: "requests", Value: 7}}}}
	e.Info.Input.Endpoint.ModelNames = []string{"m-1", "m-2"}
	if _, err := WriteExports(dir, e); err != nil {
		t.Fatal(err)
	}
	s, ok, err := ReadSummary(dir)
	if err != nil || !ok {
		t.Fatalf("ReadSummary: %v, %v", ok, err)
	}
	ttft := s.Metrics[stats.TagTTFT]
	if s.Model != "m-1" || s.RequestCount() != 7 || ttft.Unit != "ms" || ttft.Values["avg"] != 12.5 || ttft.Values["p99"] != 30 {
		t.Errorf("summary %+v, want model m-1, request_count 7, ttft avg 12.5 p99 30 ms", s)
	}
	for tag := range s.Metrics {
		if tag == "input_config" || tag == "generator" || tag == "run_info" {
			t.Errorf("%s read as a metric", tag)
		}
	}

	old := t.TempDir()
	doc := `{"records":{"request_count":{"tag":"request_count","unit":"requests","avg":89.0,"p99":null},
		"ttft":{"unit":"ms","avg":null},"no_unit":{"avg":3}},"input_config":{"endpoint":{"model_names":"single"}}}`
	if err := os.WriteFile(filepath.Join(old, SummaryJSON), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	s, ok, err = ReadSummary(old)
	if err != nil || !ok || s.Model != "single" || s.RequestCount() != 89 || len(s.Metrics) != 1 {
		t.Errorf("older layout: %+v, %v, %v; want model single, request_count 89, one metric (ttft has no value, no_unit no unit)", s, ok, err)
	}
	if _, ok, err := ReadSummary(t.TempDir()); ok || err != nil {
		t.Errorf("no summary: ok %v, err %v; want false, nil", ok, err)
	}
	if err := os.WriteFile(filepath.Join(old, SummaryJSON), []byte(`[1]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadSummary(old); err == nil {
		t.Error("a summary that is not an object: want an error")
	}
}
