package commands

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
)

// This file ports the required fields and types of AIPerf's export models to Go, to check that
// llmtap's AIPerf-named files are what AIPerf's tools accept. Two versions of the models are
// ported, each from its commit of github.com/ai-dynamo/aiperf:
//
//   - aiperf.Commit (db4f6397, 2025-10-10), the one llmtap writes: aiperf/common/models/
//     record_models.py (MetricRecordInfo, MetricRecordMetadata, MetricValue), error_models.py
//     (ErrorDetails, ErrorDetailsCount), export_models.py (JsonExportData, JsonMetricResult),
//     common/config (UserConfig: EndpointConfig, LoadGeneratorConfig and the validators of
//     UserConfig), exporters/csv_exporter.py;
//   - 7c31f579 (2025-10-03), the one AIPerf's example artifacts were written with (metadata
//     with timestamp_ns and credit_phase; the summary's metrics under records{} as
//     MetricResult with tag, header and count), so the same checks run on files AIPerf wrote.
//
// Pydantic's rules are followed where they matter: a member whose type allows None may be null
// or absent when it has a default; extra members are allowed where the model says
// extra="allow" (AIPerfBaseModel, JsonExportData) and ignored where it does not (BaseConfig);
// int fields take JSON integers only (stricter than pydantic's lax mode, which also takes 2.0).

// check validates one JSON value (decoded with UseNumber) as a pydantic type would.
type check func(v any) error

func isInt(v any) error {
	n, ok := v.(json.Number)
	if !ok {
		return fmt.Errorf("%v is not an integer", v)
	}
	if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
		return fmt.Errorf("%v is not an integer", v)
	}
	return nil
}

func isNumber(v any) error { // int | float
	if _, ok := v.(json.Number); !ok {
		return fmt.Errorf("%v is not a number", v)
	}
	return nil
}

func isStr(v any) error {
	if _, ok := v.(string); !ok {
		return fmt.Errorf("%v is not a string", v)
	}
	return nil
}

func isBool(v any) error {
	if _, ok := v.(bool); !ok {
		return fmt.Errorf("%v is not a boolean", v)
	}
	return nil
}

func isDatetime(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("%v is not a datetime string", v)
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999", "2006-01-02T15:04:05", time.RFC3339Nano} {
		if _, err := time.Parse(layout, s); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%q is not an ISO 8601 datetime", s)
}

func oneOf(values ...string) check {
	return func(v any) error {
		s, ok := v.(string)
		if !ok || !slices.Contains(values, strings.ToLower(s)) { // CaseInsensitiveStrEnum
			return fmt.Errorf("%v is not one of %v", v, values)
		}
		return nil
	}
}

func nullable(c check) check {
	return func(v any) error {
		if v == nil {
			return nil
		}
		return c(v)
	}
}

func listOf(c check) check {
	return func(v any) error {
		l, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%v is not a list", v)
		}
		for i, e := range l {
			if err := c(e); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	}
}

// dictOf is dict[str, T].
func dictOf(c check) check {
	return func(v any) error {
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%v is not an object", v)
		}
		var errs []error
		for k, e := range obj {
			if err := c(e); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", k, err))
			}
		}
		return errors.Join(errs...)
	}
}

func atLeast(c check, min float64, strict bool) check {
	return func(v any) error {
		if err := c(v); err != nil {
			return err
		}
		f, _ := v.(json.Number).Float64()
		if f < min || (strict && f == min) {
			return fmt.Errorf("%v is below the minimum %v", v, min)
		}
		return nil
	}
}

// field is one field of a model: required (no default) or not.
type field struct {
	name     string
	required bool
	c        check
}

// model is a pydantic model: its fields. Extra members are never refused (see check).
type model struct {
	name   string
	fields []field
}

func (m model) check(v any) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: %v is not an object", m.name, v)
	}
	var errs []error
	for _, f := range m.fields {
		val, present := obj[f.name]
		if !present {
			if f.required {
				errs = append(errs, fmt.Errorf("%s.%s: missing", m.name, f.name))
			}
			continue
		}
		if err := f.c(val); err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: %w", m.name, f.name, err))
		}
	}
	// Unknown members pass either way: extra="allow" keeps them, extra="ignore" (pydantic's
	// default, BaseConfig's) drops them; neither refuses them.
	return errors.Join(errs...)
}

func (m model) c() check { return m.check }

var (
	// error_models.py, both commits.
	errorDetailsModel = model{name: "ErrorDetails", fields: []field{
		{"code", false, nullable(isInt)},
		{"type", false, nullable(isStr)},
		{"message", true, isStr},
	}}
	errorDetailsCount = model{name: "ErrorDetailsCount", fields: []field{
		{"error_details", true, errorDetailsModel.c()},
		{"count", true, isInt},
	}}
	// record_models.py MetricValue: value int | float | list[float] | list[int].
	metricValue = model{name: "MetricValue", fields: []field{
		{"value", true, func(v any) error {
			if _, ok := v.([]any); ok {
				return listOf(isNumber)(v)
			}
			return isNumber(v)
		}},
		{"unit", true, isStr},
	}}
	creditPhase = oneOf("warmup", "profiling")

	// record_models.py MetricRecordMetadata at aiperf.Commit.
	recordMetadata = model{name: "MetricRecordMetadata", fields: []field{
		{"session_num", true, isInt},
		{"x_request_id", false, nullable(isStr)},
		{"x_correlation_id", false, nullable(isStr)},
		{"conversation_id", false, nullable(isStr)},
		{"turn_index", false, nullable(isInt)},
		{"request_start_ns", true, isInt},
		{"request_ack_ns", false, nullable(isInt)},
		{"request_end_ns", true, isInt},
		{"worker_id", true, isStr},
		{"record_processor_id", true, isStr},
		{"benchmark_phase", true, creditPhase},
		{"was_cancelled", false, isBool},
		{"cancellation_time_ns", false, nullable(isInt)},
	}}
	// record_models.py MetricRecordMetadata at 7c31f579 (the example artifacts).
	recordMetadataOld = model{name: "MetricRecordMetadata@7c31f579", fields: []field{
		{"x_request_id", false, nullable(isStr)},
		{"x_correlation_id", false, nullable(isStr)},
		{"conversation_id", false, nullable(isStr)},
		{"turn_index", false, nullable(isInt)},
		{"timestamp_ns", true, isInt},
		{"worker_id", true, isStr},
		{"record_processor_id", true, isStr},
		{"credit_phase", true, creditPhase},
	}}
	metricsDict = dictOf(metricValue.c())
	recordInfo  = func(meta model) model {
		return model{name: "MetricRecordInfo", fields: []field{
			{"metadata", true, meta.c()},
			{"metrics", true, metricsDict},
			{"error", false, nullable(errorDetailsModel.c())},
		}}
	}

	// export_models.py JsonMetricResult at aiperf.Commit.
	jsonMetricResult = model{name: "JsonMetricResult", fields: append([]field{
		{"unit", true, isStr},
		{"min", false, nullable(isNumber)},
		{"max", false, nullable(isNumber)},
	}, statFields("avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std")...)}
	// record_models.py MetricResult at 7c31f579.
	metricResultOld = model{name: "MetricResult@7c31f579", fields: append([]field{
		{"tag", true, isStr},
		{"unit", true, isStr},
		{"header", true, isStr},
		{"min", false, nullable(isNumber)},
		{"max", false, nullable(isNumber)},
		{"count", false, nullable(isInt)},
	}, statFields("avg", "p1", "p5", "p25", "p50", "p75", "p90", "p95", "p99", "std")...)}

	// common/config: the parts of UserConfig a run's labels come from (BaseConfig ignores extras).
	endpointConfig = model{name: "EndpointConfig", fields: []field{
		{"model_names", true, func(v any) error { // list[str], or a str parse_str_or_list splits
			if _, ok := v.(string); ok {
				return nil
			}
			return listOf(isStr)(v)
		}},
		{"type", false, oneOf("chat", "completions", "embeddings", "rankings")},
		{"streaming", false, isBool},
		{"url", false, isStr},
		{"timeout_seconds", false, atLeast(isNumber, 0, true)},
	}}
	// InputConfig (input_config.py, conversation_config.py, prompt_config.py; the newer
	// members from AIPerf's later releases, where the older models ignore them).
	inputConfigModel = model{name: "InputConfig", fields: []field{
		{"random_seed", false, nullable(isInt)},
		{"file", false, nullable(isStr)},
		{"custom_dataset_type", false, nullable(oneOf("single_turn", "multi_turn", "random_pool", "mooncake_trace"))},
		{"public_dataset", false, nullable(oneOf("sharegpt"))},
		{"dataset_sampling_strategy", false, nullable(oneOf("sequential", "random", "shuffle"))},
		{"prompt", false, model{name: "PromptConfig", fields: []field{
			{"prefix_prompt", false, model{name: "PrefixPromptConfig", fields: []field{
				{"pool_size", false, atLeast(isInt, 0, false)},
				{"length", false, atLeast(isInt, 0, false)},
				{"shared_system_prompt_length", false, nullable(atLeast(isInt, 1, false))},
				{"user_context_prompt_length", false, nullable(atLeast(isInt, 1, false))},
			}}.c()},
		}}.c()},
		{"conversation", false, model{name: "ConversationConfig", fields: []field{
			{"num", false, atLeast(isInt, 1, false)},
			{"turn", false, model{name: "TurnConfig", fields: []field{
				{"mean", false, atLeast(isInt, 1, false)},
				{"stddev", false, atLeast(isInt, 0, false)},
				{"delay", false, model{name: "TurnDelayConfig", fields: []field{
					{"mean", false, atLeast(isNumber, 0, false)},
					{"stddev", false, atLeast(isNumber, 0, false)},
					{"ratio", false, atLeast(isNumber, 0, false)},
				}}.c()},
			}}.c()},
		}}.c()},
	}}
	loadgenConfig = model{name: "LoadGeneratorConfig", fields: []field{
		{"benchmark_duration", false, nullable(atLeast(isNumber, 1, false))},
		{"benchmark_grace_period", false, atLeast(isNumber, 0, false)},
		{"concurrency", false, nullable(atLeast(isInt, 1, false))},
		{"request_rate", false, nullable(atLeast(isNumber, 0, true))},
		{"request_rate_mode", false, oneOf("constant", "poisson", "concurrency_burst")},
		{"request_count", false, atLeast(isInt, 1, false)},
		{"warmup_request_count", false, atLeast(isInt, 0, false)},
		{"request_cancellation_rate", false, atLeast(isNumber, 0, false)},
		{"request_cancellation_delay", false, atLeast(isNumber, 0, false)},
		// AIPerf's later releases.
		{"user_centric_rate", false, nullable(atLeast(isNumber, 0, true))},
		{"num_users", false, nullable(atLeast(isInt, 1, false))},
		{"concurrency_ramp_duration", false, nullable(atLeast(isNumber, 0, true))},
		{"request_rate_ramp_duration", false, nullable(atLeast(isNumber, 0, true))},
		{"warmup_duration", false, nullable(atLeast(isNumber, 0, true))},
		{"warmup_concurrency", false, nullable(atLeast(isInt, 1, false))},
		{"warmup_request_rate", false, nullable(atLeast(isNumber, 0, true))},
		{"warmup_concurrency_ramp_duration", false, nullable(atLeast(isNumber, 0, true))},
		{"warmup_request_rate_ramp_duration", false, nullable(atLeast(isNumber, 0, true))},
		{"num_profile_runs", false, func(v any) error {
			if err := atLeast(isInt, 1, false)(v); err != nil {
				return err
			}
			if n, _ := v.(json.Number).Int64(); n > 10 { // isInt checked the type
				return fmt.Errorf("%v is over the maximum 10", v)
			}
			return nil
		}},
		{"confidence_level", false, func(v any) error {
			n, _ := v.(json.Number)
			if f, err := n.Float64(); err != nil || f <= 0 || f >= 1 {
				return fmt.Errorf("%v is not in (0, 1)", v)
			}
			return nil
		}},
		{"profile_run_cooldown_seconds", false, atLeast(isNumber, 0, false)},
		{"profile_run_disable_warmup_after_first", false, isBool},
	}}
	userConfig = model{name: "UserConfig", fields: []field{
		{"endpoint", true, endpointConfig.c()},
		// tokenizer_config.py TokenizerConfig.
		{"tokenizer", false, model{name: "TokenizerConfig", fields: []field{
			{"name", false, isStr},
			{"revision", false, isStr},
			{"trust_remote_code", false, isBool},
		}}.c()},
		{"loadgen", false, func(v any) error {
			if err := loadgenConfig.check(v); err != nil {
				return err
			}
			// UserConfig.validate_benchmark_mode, on the fields that are set.
			lg := v.(map[string]any)
			_, dur := lg["benchmark_duration"]
			_, count := lg["request_count"]
			_, grace := lg["benchmark_grace_period"]
			if dur && count {
				return errors.New("count-based and duration-based benchmarking cannot be used together")
			}
			if grace && !dur {
				return errors.New("--benchmark-grace-period can only be used with --benchmark-duration")
			}
			// LoadGeneratorConfig.validate_multi_run_params: the multi-run members only with
			// more than one run.
			runs, _ := lg["num_profile_runs"].(json.Number)
			if n, _ := runs.Int64(); n <= 1 {
				for _, m := range []string{"confidence_level", "profile_run_cooldown_seconds", "profile_run_disable_warmup_after_first"} {
					if _, ok := lg[m]; ok {
						return fmt.Errorf("%s only applies with num_profile_runs > 1", m)
					}
				}
			}
			return nil
		}},
		{"input", false, inputConfigModel.c()},
		{"cli_command", false, nullable(isStr)},
	}}

	// export_models.py JsonExportData at aiperf.Commit: metrics are top-level members.
	jsonExportDataFields = []field{
		{"input_config", false, nullable(userConfig.c())},
		{"was_cancelled", false, nullable(isBool)},
		{"error_summary", false, nullable(listOf(errorDetailsCount.c()))},
		{"start_time", false, nullable(isDatetime)},
		{"end_time", false, nullable(isDatetime)},
	}
	// JsonExportData at 7c31f579 (json_exporter.py): metrics under records{}.
	jsonExportDataOld = model{name: "JsonExportData@7c31f579", fields: append([]field{
		{"records", false, nullable(dictOf(metricResultOld.c()))},
	}, jsonExportDataFields...)}
)

func statFields(names ...string) []field {
	out := make([]field, len(names))
	for i, n := range names {
		out[i] = field{n, false, nullable(isNumber)}
	}
	return out
}

// aiperfJSONTags are the metric members JsonExportData declares at aiperf.Commit, each a
// JsonMetricResult | None.
var aiperfJSONTags = []string{
	"request_throughput", "request_latency", "request_count", "time_to_first_token",
	"time_to_second_token", "inter_token_latency", "output_token_throughput",
	"output_token_throughput_per_user", "output_sequence_length", "input_sequence_length", "goodput",
	"good_request_count", "output_token_count", "reasoning_token_count", "min_request_timestamp",
	"max_response_timestamp", "inter_chunk_latency", "total_output_tokens", "total_reasoning_tokens",
	"benchmark_duration", "total_isl", "total_osl", "error_request_count", "error_isl", "total_error_isl",
}

// jsonExportData is JsonExportData at aiperf.Commit; extra members are allowed (its
// model_config says extra="allow"), so llmtap's additions pass.
var jsonExportData = func() model {
	m := model{name: "JsonExportData", fields: slices.Clone(jsonExportDataFields)}
	for _, tag := range aiperfJSONTags {
		m.fields = append(m.fields, field{tag, false, nullable(jsonMetricResult.c())})
	}
	return m
}()

// decodeJSON decodes with numbers kept as json.Number, so integers stay apart from floats.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// checkJSONL checks every line of a profile_export.jsonl against MetricRecordInfo.
func checkJSONL(path string, m model) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	n := 0
	var errs []error
	for sc.Scan() {
		n++
		v, err := decodeJSON(sc.Bytes())
		if err == nil {
			err = m.check(v)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
		}
	}
	return n, errors.Join(append(errs, sc.Err())...)
}

// checkSummary checks a profile_export_aiperf.json against JsonExportData.
func checkSummary(path string, m model) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	v, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	obj, _ := v.(map[string]any)
	return obj, m.check(v)
}

// checkCSV checks a profile_export_aiperf.csv against what csv_exporter.py writes: a section
// with the header Metric,<stat keys> and one row per distribution, then after one empty line
// Metric,Value and one row per single value; rows sorted by metric within a section (the sort
// is on the tag, so names are checked to be distinct and non-empty rather than sorted);
// every number with two decimals; rows end in \r\n (Python's csv.writer), or \n where git
// normalized the file.
func checkCSV(b []byte, statKeys []string) ([]string, error) {
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	sections := strings.Split(strings.TrimSuffix(text, "\n"), "\n\n")
	if len(sections) != 2 {
		return nil, fmt.Errorf("%d sections, want 2", len(sections))
	}
	var names []string
	row := func(line string, cells int) error {
		f := strings.Split(line, ",")
		if len(f) != cells {
			return fmt.Errorf("row %q: %d cells, want %d", line, len(f), cells)
		}
		if f[0] == "" || slices.Contains(names, f[0]) {
			return fmt.Errorf("row %q: empty or repeated name", line)
		}
		names = append(names, f[0])
		for _, c := range f[1:] {
			if _, err := strconv.ParseFloat(c, 64); c != "" && (err != nil || !strings.Contains(c, ".") || len(c)-strings.Index(c, ".") != 3) {
				return fmt.Errorf("row %q: %q is not a number with two decimals", line, c)
			}
		}
		return nil
	}
	dist := strings.Split(sections[0], "\n")
	if want := "Metric," + strings.Join(statKeys, ","); dist[0] != want {
		return nil, fmt.Errorf("header %q, want %q", dist[0], want)
	}
	for _, l := range dist[1:] {
		if err := row(l, len(statKeys)+1); err != nil {
			return nil, err
		}
	}
	single := strings.Split(sections[1], "\n")
	if single[0] != "Metric,Value" {
		return nil, fmt.Errorf("second header %q", single[0])
	}
	for _, l := range single[1:] {
		if err := row(l, 2); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// aiperfStatKeys is STAT_KEYS at aiperf.Commit, and at 7c31f579 (without p10).
var (
	aiperfStatKeys    = []string{"avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"}
	aiperfStatKeysOld = []string{"avg", "min", "max", "p1", "p5", "p25", "p50", "p75", "p90", "p95", "p99", "std"}
)

const aiperfExamples = "../../report/testdata/aiperf-run1"

// TestAIPerfModelsAcceptAIPerfsOwnFiles runs the port on the files AIPerf wrote: the port must
// accept them, or it is not a port. It must also refuse what AIPerf would refuse.
func TestAIPerfModelsAcceptAIPerfsOwnFiles(t *testing.T) {
	n, err := checkJSONL(filepath.Join(aiperfExamples, "profile_export.jsonl"), recordInfo(recordMetadataOld))
	if err != nil || n != 40 {
		t.Errorf("AIPerf's profile_export.jsonl: %d lines: %v", n, err)
	}
	sum, err := checkSummary(filepath.Join(aiperfExamples, "profile_export_aiperf.json"), jsonExportDataOld)
	if err != nil {
		t.Errorf("AIPerf's profile_export_aiperf.json: %v", err)
	}
	if recs, _ := sum["records"].(map[string]any); len(recs) != 21 {
		t.Errorf("AIPerf's summary: %d metrics under records, want 21", len(recs))
	}
	b, err := os.ReadFile(filepath.Join(aiperfExamples, "profile_export_aiperf.csv"))
	if err != nil {
		t.Fatal(err)
	}
	names, err := checkCSV(b, aiperfStatKeysOld)
	if err != nil {
		t.Errorf("AIPerf's profile_export_aiperf.csv: %v", err)
	}
	for _, want := range []string{"Request Count", "Time to First Token (ms)", "Minimum Request Timestamp (ns)"} {
		if !slices.Contains(names, want) {
			t.Errorf("AIPerf's CSV has no row %q: %v", want, names)
		}
	}

	// What AIPerf refuses, the port refuses: the layout llmtap wrote before it followed AIPerf.
	bad := map[string]string{
		"no session_num": `{"metadata":{"x_request_id":"a","request_start_ns":1,"request_end_ns":2,"worker_id":"w","record_processor_id":"r","benchmark_phase":"profiling"},"metrics":{},"error":null}`,
		"error string":   `{"metadata":{"session_num":0,"request_start_ns":1,"request_end_ns":2,"worker_id":"w","record_processor_id":"r","benchmark_phase":"profiling"},"metrics":{},"error":"http_status"}`,
		"float ns":       `{"metadata":{"session_num":0,"request_start_ns":1.5,"request_end_ns":2,"worker_id":"w","record_processor_id":"r","benchmark_phase":"profiling"},"metrics":{},"error":null}`,
		"bad phase":      `{"metadata":{"session_num":0,"request_start_ns":1,"request_end_ns":2,"worker_id":"w","record_processor_id":"r","benchmark_phase":"later"},"metrics":{},"error":null}`,
		"value string":   `{"metadata":{"session_num":0,"request_start_ns":1,"request_end_ns":2,"worker_id":"w","record_processor_id":"r","benchmark_phase":"profiling"},"metrics":{"ttft":{"value":"1","unit":"ms"}}}`,
	}
	for name, line := range bad {
		v, _ := decodeJSON([]byte(line))
		if recordInfo(recordMetadata).check(v) == nil {
			t.Errorf("%s: the port accepts a line AIPerf refuses", name)
		}
	}
	for name, doc := range map[string]string{
		"error_summary map":  `{"error_summary":{"upstream_failure":3}}`,
		"flat input_config":  `{"input_config":{"model":"m","concurrency":"4"}}`,
		"metric no unit":     `{"request_count":{"avg":3}}`,
		"count and duration": `{"input_config":{"endpoint":{"model_names":["m"]},"loadgen":{"request_count":5,"benchmark_duration":10}}}`,
		"multi-run member":   `{"input_config":{"endpoint":{"model_names":["m"]},"loadgen":{"confidence_level":0.9}}}`,
		"fractional turns":   `{"input_config":{"endpoint":{"model_names":["m"]},"input":{"conversation":{"turn":{"mean":2.5}}}}}`,
		"unknown sampling":   `{"input_config":{"endpoint":{"model_names":["m"]},"input":{"dataset_sampling_strategy":"sorted"}}}`,
		"system beside zero": `{"input_config":{"endpoint":{"model_names":["m"]},"input":{"prompt":{"prefix_prompt":{"shared_system_prompt_length":0}}}}}`,
	} {
		v, _ := decodeJSON([]byte(doc))
		if jsonExportData.check(v) == nil {
			t.Errorf("%s: the port accepts a summary AIPerf refuses", name)
		}
	}
}

// TestBenchExportsPassAIPerfModels runs benches against the mock (one streaming with a
// duration, reasoning and a share of HTTP 500s; one counted, non-streaming) and checks every
// line of profile_export.jsonl, the summary and the CSV against the port of AIPerf's models at
// aiperf.Commit, and the labels AIPerf's tools read.
func TestBenchExportsPassAIPerfModels(t *testing.T) {
	// The load shapes of docs/bench-shapes.md write the same files.
	multi := filepath.Join(t.TempDir(), "multi.jsonl")
	if err := os.WriteFile(multi, []byte(`{"session_id": "a", "turns": [{"text": "Hello?"}, {"text": "And then?", "delay": 5}]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	single := filepath.Join(t.TempDir(), "single.jsonl")
	if err := os.WriteFile(single, []byte(`{"text": "Hello?", "output_length": 4}`+"\n"+`{"texts": ["a", "b"]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokFile := filepath.Join("..", "..", "telemetry", "tokens", "hf", "testdata", "bytelevel-llama3.json")
	share := filepath.Join(t.TempDir(), "sharegpt.json")
	if err := os.WriteFile(share, []byte(`[{"conversations": [{"from": "human", "value": "Tell me about the rabbit hole."}, {"from": "gpt", "value": "It went straight on like a tunnel."}]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want map[string]string // input_config members (dotted path) and their JSON
	}{
		{"duration", []string{"--concurrency", "3", "--benchmark-duration", "1", "--benchmark-grace-period", "5"},
			map[string]string{"loadgen.concurrency": "3", "input.dataset_sampling_strategy": `"shuffle"`, "input.conversation": "null"}},
		{"count", []string{"--request-rate", "200", "--request-count", "12", "--streaming=false", "--dataset-sampling-strategy", "random"},
			map[string]string{"input.dataset_sampling_strategy": `"random"`}},
		{"conversations", []string{"--concurrency", "2", "--conversation-num", "4", "--conversation-turn-mean", "3",
			"--conversation-turn-delay-mean", "5", "--request-count", "12"},
			map[string]string{"input.conversation.num": "4", "input.conversation.turn.mean": "3", "input.conversation.turn.delay.mean": "5",
				"input.conversation.turn.delay.ratio": "1"}},
		{"user-centric", []string{"--user-centric-rate", "100", "--num-users", "4", "--conversation-turn-mean", "3", "--request-count", "12"},
			map[string]string{"loadgen.user_centric_rate": "100", "loadgen.num_users": "4", "input.conversation.turn.mean": "3"}},
		{"prefix", []string{"--request-rate", "200", "--num-prefix-prompts", "2", "--prefix-prompt-length", "30", "--request-count", "12"},
			map[string]string{"input.prompt.prefix_prompt.pool_size": "2", "input.prompt.prefix_prompt.length": "30"}},
		{"system-context", []string{"--concurrency", "2", "--shared-system-prompt-length", "30", "--user-context-prompt-length", "10",
			"--conversation-turn-mean", "2", "--request-count", "12"},
			map[string]string{"input.prompt.prefix_prompt.shared_system_prompt_length": "30", "input.prompt.prefix_prompt.user_context_prompt_length": "10"}},
		{"multi-turn-file", []string{"--concurrency", "2", "--input-file", multi, "--custom-dataset-type", "multi_turn", "--request-count", "12"},
			map[string]string{"input.file": strconv.Quote(multi), "input.custom_dataset_type": `"multi_turn"`, "input.dataset_sampling_strategy": `"sequential"`}},
		{"random-pool-file", []string{"--request-rate", "200", "--input-file", single, "--custom-dataset-type", "random_pool", "--request-count", "12"},
			map[string]string{"input.custom_dataset_type": `"random_pool"`, "input.dataset_sampling_strategy": `"shuffle"`}},
		{"sharegpt-file", []string{"--concurrency", "2", "--public-dataset", "sharegpt", "--input-file", share, "--request-count", "12"},
			map[string]string{"input.public_dataset": `"sharegpt"`, "input.dataset_sampling_strategy": `"shuffle"`, "tokenizer": "null"}},
		{"tokenizer", []string{"--concurrency", "2", "--tokenizer", tokFile, "--request-count", "12"},
			map[string]string{"tokenizer.name": strconv.Quote(tokFile)}},
		{"ramp-warmup-timeout", []string{"--concurrency", "2", "--concurrency-ramp-duration", "0.2", "--warmup-duration", "0.1",
			"--warmup-concurrency", "1", "--request-timeout-seconds", "30", "--request-count", "12"},
			map[string]string{"loadgen.concurrency_ramp_duration": "0.2", "loadgen.warmup_duration": "0.1", "loadgen.warmup_concurrency": "1",
				"endpoint.timeout_seconds": "30", "loadgen.num_profile_runs": "null"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A mock of its own: request k fails by the draw PCG(seed, k), so which of the run's
			// requests fail does not depend on what another run sent first.
			cfg := fastMock()
			cfg.Reasoning = 3
			cfg.ErrorRate = 0.4
			_, url := testkit.StartMock(t, cfg)
			dir := t.TempDir()
			args := append([]string{"--url", url, "--model", "mock-model", "--isl", "20", "--osl", "8",
				"--extra-inputs", "ignore_eos:true", "--artifact-dir", dir}, tc.args...)
			code, out, _, _ := runBenchArgs(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, out)
			}
			n, err := checkJSONL(filepath.Join(dir, "profile_export.jsonl"), recordInfo(recordMetadata))
			if err != nil || n == 0 {
				t.Errorf("profile_export.jsonl: %d lines: %v", n, err)
			}
			sum, err := checkSummary(filepath.Join(dir, "profile_export_aiperf.json"), jsonExportData)
			if err != nil {
				t.Errorf("profile_export_aiperf.json: %v", err)
			}
			ic, _ := sum["input_config"].(map[string]any)
			ep, _ := ic["endpoint"].(map[string]any)
			if names, _ := ep["model_names"].([]any); len(names) != 1 || names[0] != "mock-model" || ep["type"] != "chat" {
				t.Errorf("input_config.endpoint %v: AIPerf's plots label runs by model_names and type", ep)
			}
			for path, want := range tc.want {
				if got := jsonAt(ic, path); got != want {
					t.Errorf("input_config.%s is %s, want %s", path, got, want)
				}
			}
			errs, _ := sum["error_summary"].([]any)
			if failed := sum["error_request_count"].(map[string]any)["avg"].(json.Number); len(errs) == 0 || failed == "0" {
				t.Errorf("error_summary %v, error_request_count %v: the mock's HTTP 500s are errors in AIPerf's count", errs, failed)
			}
			b, err := os.ReadFile(filepath.Join(dir, "profile_export_aiperf.csv"))
			if err != nil {
				t.Fatal(err)
			}
			names, err := checkCSV(b, aiperfStatKeys)
			if err != nil {
				t.Errorf("profile_export_aiperf.csv: %v\n%s", err, b)
			}
			for _, want := range []string{"Request Count", "Error Request Count", "Output Sequence Length (tokens)", "Total Output Sequence Length (tokens)"} {
				if !slices.Contains(names, want) {
					t.Errorf("CSV has no row %q", want)
				}
			}
			t.Run("AIPerf's own code", func(t *testing.T) {
				j := judgeAIPerf(t, dir)
				if j.Lines == 0 || j.Errors == 0 || j.CSVIdentical == nil || !*j.CSVIdentical {
					t.Errorf("judged %d lines, %d errors, CSV identical %v: the run must have lines, the mock's errors and a CSV", j.Lines, j.Errors, j.CSVIdentical)
				}
				// inputs.json: a payload per request sent (a request cut by the grace period has
				// one and no line), a session per conversation.
				if j.InputPayloads == nil || *j.InputPayloads < j.Lines || *j.InputSessions < j.Conversations {
					t.Errorf("inputs.json: %v payloads in %v sessions for %d lines of %d conversations", j.InputPayloads, j.InputSessions, j.Lines, j.Conversations)
				}
			})
		})
	}
}

// jsonAt returns the JSON of the member at a dotted path of a decoded object ("null" when
// absent).
func jsonAt(obj map[string]any, path string) string {
	var v any = obj
	for _, k := range strings.Split(path, ".") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	b, _ := json.Marshal(v)
	return string(b)
}
