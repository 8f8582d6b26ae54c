package commands

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/internal/testkit"
)

var (
	// export_models.py TimesliceData, both versions: until 2026 timeslice_index was required;
	// since, it is optional beside start_ns, end_ns (ints ≥ 0) and is_complete. Its metrics are
	// extra members, written as JsonMetricResult.
	timesliceData = model{name: "TimesliceData", fields: []field{
		{"timeslice_index", true, isInt},
		{"start_ns", false, nullable(atLeast(isInt, 0, false))},
		{"end_ns", false, nullable(atLeast(isInt, 0, false))},
		{"is_complete", false, nullable(isBool)},
	}}
	// TimesliceCollectionExportData.
	timesliceCollection = model{name: "TimesliceCollectionExportData", fields: []field{
		{"timeslices", true, listOf(func(v any) error {
			if err := timesliceData.check(v); err != nil {
				return err
			}
			for _, m := range v.(map[string]any) {
				if _, ok := m.(map[string]any); ok {
					if err := jsonMetricResult.check(m); err != nil {
						return err
					}
				}
			}
			return nil
		})},
		{"input_config", false, nullable(userConfig.c())},
	}}
	// The aggregate file: JsonExportData with schema_version and aiperf_version set and the
	// aggregate's metadata and metrics as extra members (AggregateConfidenceJsonExporter); each
	// metric is ConfidenceMetric's fields, None (null) where not finite.
	confidenceMetric = model{name: "ConfidenceMetric", fields: append([]field{{"unit", true, isStr}},
		statFields("mean", "std", "min", "max", "cv", "se", "ci_low", "ci_high", "t_critical")...)}
	aggregateExport = model{name: "JsonExportData(aggregate)", fields: append(slices0(jsonExportData.fields),
		field{"schema_version", true, isStr}, field{"aiperf_version", true, isStr},
		field{"metadata", true, model{name: "metadata", fields: []field{
			{"aggregation_type", true, oneOf("confidence")},
			{"num_profile_runs", true, isInt},
			{"num_successful_runs", true, isInt},
			{"failed_runs", true, listOf(func(any) error { return nil })},
			{"confidence_level", true, isNumber},
			{"run_labels", true, listOf(isStr)},
		}}.c()},
		field{"metrics", true, dictOf(confidenceMetric.c())})}
)

func slices0(f []field) []field { return append([]field(nil), f...) }

// TestBenchSweepExportsPassAIPerfModels runs the new modes (a concurrency sweep with repeated
// runs, ramps, warmup by duration and timeslices; a ramped rate with a timeout) and checks
// every file against the port of AIPerf's models: each run's three files, the timeslice
// files and the aggregate.
func TestBenchSweepExportsPassAIPerfModels(t *testing.T) {
	cfg := fastMock()
	cfg.ErrorRate = 0.2
	_, url := testkit.StartMock(t, cfg)
	base := t.TempDir()
	common := []string{"--url", url, "--model", "mock-model", "--isl", "20", "--osl", "8", "--slice-duration", "0.1"}
	code, out := runBenchPlain(t, append(common, "--concurrency", "1,3", "--num-profile-runs", "2",
		"--parameter-sweep-mode", "independent", "--request-count", "12", "--warmup-duration", "0.1",
		"--concurrency-ramp-duration", "0.2", "--artifact-dir", filepath.Join(base, "sweep"))...)
	if code != 0 {
		t.Fatalf("sweep: exit %d\n%s", code, out)
	}
	code, out = runBenchPlain(t, append(common, "--request-rate", "80", "--request-rate-ramp-duration", "0.5",
		"--benchmark-duration", "1", "--request-timeout-seconds", "5", "--artifact-dir", filepath.Join(base, "ramp"))...)
	if code != 0 {
		t.Fatalf("ramp: exit %d\n%s", code, out)
	}
	var runs []string
	for _, v := range []string{"concurrency_1", "concurrency_3"} {
		for _, r := range []string{"run_0001", "run_0002"} {
			runs = append(runs, filepath.Join(base, "sweep", v, "profile_runs", r))
		}
		sum, err := checkSummary(filepath.Join(base, "sweep", v, "aggregate", aiperf.AggregateJSON), aggregateExport)
		if err != nil || len(sum["metrics"].(map[string]any)) == 0 {
			t.Errorf("%s aggregate: %v", v, err)
		}
	}
	for _, dir := range append(runs, filepath.Join(base, "ramp")) {
		if n, err := checkJSONL(filepath.Join(dir, "profile_export.jsonl"), recordInfo(recordMetadata)); err != nil || n == 0 {
			t.Errorf("%s profile_export.jsonl: %d lines: %v", dir, n, err)
		}
		sum, err := checkSummary(filepath.Join(dir, "profile_export_aiperf.json"), jsonExportData)
		if err != nil {
			t.Errorf("%s profile_export_aiperf.json: %v", dir, err)
		}
		// The run's settings, in AIPerf's input_config: a sweep's runs each with its own
		// concurrency and the repeated runs' members; the ramped run its ramp and timeout.
		ic, _ := sum["input_config"].(map[string]any)
		want := map[string]string{"loadgen.num_profile_runs": "2", "loadgen.confidence_level": "0.95",
			"loadgen.profile_run_disable_warmup_after_first": "true", "loadgen.concurrency_ramp_duration": "0.2",
			"loadgen.concurrency": filepath.Base(filepath.Dir(filepath.Dir(dir)))[len("concurrency_"):], "output.slice_duration": "0.1"}
		if filepath.Base(dir) == "ramp" {
			want = map[string]string{"loadgen.request_rate_ramp_duration": "0.5", "endpoint.timeout_seconds": "5",
				"loadgen.num_profile_runs": "null", "loadgen.confidence_level": "null"}
		}
		for path, w := range want {
			if got := jsonAt(ic, path); got != w {
				t.Errorf("%s input_config.%s is %s, want %s", dir, path, got, w)
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.csv")); err != nil {
			t.Error(err)
		} else if _, err := checkCSV(b, aiperfStatKeys); err != nil {
			t.Errorf("%s profile_export_aiperf.csv: %v", dir, err)
		}
		ts, err := checkSummary(filepath.Join(dir, aiperf.TimeslicesJSON), timesliceCollection)
		if err != nil || len(ts["timeslices"].([]any)) == 0 {
			t.Errorf("%s timeslices: %v", dir, err)
		}
		t.Run("AIPerf's own code on "+filepath.Base(dir), func(t *testing.T) {
			if j := judgeAIPerf(t, dir); j.Lines == 0 || j.CSVIdentical == nil || !*j.CSVIdentical {
				t.Errorf("judged %d lines, CSV identical %v", j.Lines, j.CSVIdentical)
			}
		})
	}
}
