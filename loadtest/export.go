package loadtest

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/llmtap/llmtap/telemetry/stats"
)

// RunInfo is what a run was and how it was invoked, for the JSON export: llmtap's own record
// (run_info) and AIPerf's nested input_config.
type RunInfo struct {
	Seed       uint64         `json:"seed"`
	CLICommand string         `json:"cli_command"`
	Mode       string         `json:"mode"`
	Flags      map[string]any `json:"flags"`
	// Input is AIPerf's input_config (its UserConfig), kept out of run_info.
	Input InputConfig `json:"-"`
}

// InputConfig is the part of AIPerf's UserConfig (aiperf/common/config/user_config.py at
// AIPerfCommit) a llmtap run has: AIPerf's tools read the model, endpoint type and concurrency
// labels of a run from it. Members AIPerf would reject are left out (its defaults apply): an
// endpoint type it does not know (messages, ollama_chat: run_info.flags has llmtap's), a
// gamma arrival pattern, a duration under its minimum of 1 s, and the request count of a
// duration-based run or the grace period of a count-based one (its validators refuse either).
type InputConfig struct {
	Endpoint struct {
		ModelNames []string `json:"model_names"`
		Type       string   `json:"type,omitempty"`
		Streaming  bool     `json:"streaming"`
		URL        string   `json:"url"`
		// TimeoutSeconds is --request-timeout-seconds.
		TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	} `json:"endpoint"`
	Input   InputSection `json:"input"`
	Loadgen struct {
		Concurrency              *int     `json:"concurrency"`
		RequestRate              *float64 `json:"request_rate"`
		RequestRateMode          string   `json:"request_rate_mode,omitempty"`
		RequestCount             *int     `json:"request_count,omitempty"`
		BenchmarkDuration        *float64 `json:"benchmark_duration,omitempty"`
		BenchmarkGracePeriod     *float64 `json:"benchmark_grace_period,omitempty"`
		WarmupRequestCount       int      `json:"warmup_request_count"`
		RequestCancellationRate  float64  `json:"request_cancellation_rate"`
		RequestCancellationDelay float64  `json:"request_cancellation_delay"`
		LoadgenShapes
	} `json:"loadgen"`
	Output struct {
		ArtifactDirectory string   `json:"artifact_directory"`
		SliceDuration     *float64 `json:"slice_duration"`
	} `json:"output"`
	// Tokenizer is --tokenizer's file (AIPerf's TokenizerConfig.name takes a name or a path);
	// absent with o200k_base, which AIPerf cannot name.
	Tokenizer  *TokenizerConfig `json:"tokenizer,omitempty"`
	CLICommand string           `json:"cli_command"`
}

// TokenizerConfig is AIPerf's tokenizer config (tokenizer_config.py): the tokenizer that sized
// the prompts and counted what the server did not report.
type TokenizerConfig struct {
	Name string `json:"name"`
}

// Export is profile_export_aiperf.json: AIPerf's JsonExportData (metrics as top-level
// members by tag, input_config, was_cancelled, error_summary, start_time, end_time), then
// llmtap's additions, which AIPerf's model allows (extra="allow").
type Export struct {
	Group      stats.GroupSummary // the class's requests, all status classes combined
	Others     []stats.GroupSummary
	Generator  GeneratorReport
	Info       RunInfo
	Start, End time.Time
	Cancelled  bool
	SLOs       []stats.SLO
	Errors     []ErrorCount
	Unfinished int64
	// ErrorISL is the distribution of the failed requests' input sequence lengths (AIPerf's
	// error_isl; its sum is total_error_isl); Count 0 when no failed request had one.
	ErrorISL stats.Stat
}

// aiperfTime writes a time as AIPerf's datetime.isoformat() does, in UTC: no zone, microseconds.
func aiperfTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000") }

// summaryMembers lists the members of profile_export_aiperf.json in order.
func (e Export) summaryMembers() []jsonMember {
	g := e.Group
	m := e.metrics()
	errs := e.Errors
	if errs == nil {
		errs = []ErrorCount{}
	}
	return append(m,
		jsonMember{"input_config", e.Info.Input},
		jsonMember{"was_cancelled", e.Cancelled},
		jsonMember{"error_summary", errs},
		jsonMember{"start_time", aiperfTime(e.Start)},
		jsonMember{"end_time", aiperfTime(e.End)},
		// llmtap's additions.
		jsonMember{"aiperf_commit", AIPerfCommit},
		jsonMember{"model", g.Key.Model},
		jsonMember{"class", g.Key.Class},
		jsonMember{"unfinished_request_count", e.Unfinished},
		jsonMember{"sources", g.Sources},
		jsonMember{"errors", nonNil(g.Errors)},
		jsonMember{"goodput_objectives", e.SLOs},
		jsonMember{"generator", e.Generator},
		jsonMember{"run_info", e.Info},
		jsonMember{"status_groups", e.Others},
	)
}

// metricMembers lists a group's metrics as members of AIPerf's JsonExportData, by tag, in the
// catalog's order, then its time bounds.
func metricMembers(g stats.GroupSummary) []jsonMember {
	var m []jsonMember
	for _, mt := range stats.Catalog() {
		if mt.Dist {
			if st, ok := g.Metrics[mt.Tag]; ok {
				m = append(m, jsonMember{mt.Tag, st})
			}
		} else if sc, ok := g.Scalars[mt.Tag]; ok {
			m = append(m, jsonMember{mt.Tag, sc})
		}
	}
	if !g.Start.IsZero() {
		m = append(m,
			jsonMember{"min_request_timestamp", stats.Scalar{Unit: "ns", Value: float64(g.Start.UnixNano())}},
			jsonMember{"max_response_timestamp", stats.Scalar{Unit: "ns", Value: float64(g.End.UnixNano())}})
	}
	return m
}

// metrics lists the run's metrics, AIPerf's and llmtap's, as members of JsonExportData.
func (e Export) metrics() []jsonMember {
	m := metricMembers(e.Group)
	if e.ErrorISL.Count > 0 {
		m = append(m, jsonMember{"error_isl", e.ErrorISL},
			jsonMember{"total_error_isl", stats.Scalar{Unit: e.ErrorISL.Unit, Value: e.ErrorISL.Sum}})
	}
	return m
}

func nonNil(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}

// jsonMember is one member of a JSON object written in a fixed order.
type jsonMember struct {
	k string
	v any
}

func (e Export) MarshalJSON() ([]byte, error) { return marshalMembers(e.summaryMembers()) }

// marshalMembers writes members as one JSON object, in their order.
func marshalMembers(members []jsonMember) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(m.k)
		vb, err := json.Marshal(m.v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.k, err)
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ClassGroups returns the cumulative groups of class, the ones AIPerf's export combines.
func ClassGroups(s stats.Summary, class string) []stats.GroupSummary {
	var out []stats.GroupSummary
	for _, g := range s.Groups {
		if g.Window == stats.WindowCumulative && g.Key.Class == class {
			out = append(out, g)
		}
	}
	return out
}

// WriteExports writes profile_export_aiperf.json and .csv into dir.
func WriteExports(dir string, e Export) ([]string, error) {
	jp := filepath.Join(dir, "profile_export_aiperf.json")
	if err := writeWhole(jp, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(e)
	}); err != nil {
		return nil, err
	}
	cp := filepath.Join(dir, "profile_export_aiperf.csv")
	if err := writeWhole(cp, func(w io.Writer) error { return writeCSV(w, e) }); err != nil {
		return nil, err
	}
	return []string{jp, cp}, nil
}

// writeCSV writes profile_export_aiperf.csv as AIPerf's CsvExporter does at AIPerfCommit
// (aiperf/exporters/csv_exporter.py): the metrics AIPerf's registry has, nothing else (its
// exporter cannot write a tag it does not know; llmtap's further figures are in the JSON file).
// A section "Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std" with a row per
// distribution, a blank line, then "Metric,Value" with a row per single value; rows sorted by
// tag within a section, named "Header (unit)" with AIPerf's header (no unit for "requests"),
// every number as Python's f"{float(v):.2f}" writes it (AIPerf's aggregation holds values as
// float64), rows ended by \r\n (Python's csv.writer).
func writeCSV(w io.Writer, e Export) error {
	type row struct {
		tag   string
		cells []string
	}
	var dists, singles []row
	for _, m := range e.metrics() {
		header, ok := aiperfHeaders[m.k]
		if !ok {
			continue
		}
		switch v := m.v.(type) {
		case stats.Stat:
			cells := []string{csvName(header, v.Unit)}
			for _, k := range stats.AIPerfStatKeys() {
				cells = append(cells, pyFloat(v.Get(k), 2))
			}
			dists = append(dists, row{m.k, cells})
		case stats.Scalar:
			singles = append(singles, row{m.k, []string{csvName(header, v.Unit), pyFloat(v.Value, 2)}})
		}
	}
	byTag := func(a, b row) int { return strings.Compare(a.tag, b.tag) }
	slices.SortFunc(dists, byTag)
	slices.SortFunc(singles, byTag)
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	if len(dists) > 0 {
		cw.Write(append([]string{"Metric"}, stats.AIPerfStatKeys()...))
		for _, r := range dists {
			cw.Write(r.cells)
		}
		if len(singles) > 0 {
			cw.Write(nil) // csv.writer.writerow([]): an empty line
		}
	}
	if len(singles) > 0 {
		cw.Write([]string{"Metric", "Value"})
		for _, r := range singles {
			cw.Write(r.cells)
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvName is CsvExporter._format_metric_name: the header, and the unit in parentheses unless
// it is "count" or "requests".
func csvName(header, unit string) string {
	if unit != "" && !strings.EqualFold(unit, "count") && !strings.EqualFold(unit, "requests") {
		return header + " (" + unit + ")"
	}
	return header
}

// aiperfHeaders are the metrics of AIPerf's MetricRegistry at AIPerfCommit that its
// CsvExporter writes (those not flagged EXPERIMENTAL or INTERNAL), by tag, with their headers
// (aiperf/metrics/types/*.py). AIPerf's own code checks this table: the export test has AIPerf's
// CsvExporter write the CSV again from the JSON summary and compares the bytes.
var aiperfHeaders = map[string]string{
	"benchmark_duration":               "Benchmark Duration",
	"error_isl":                        "Error Input Sequence Length",
	"error_request_count":              "Error Request Count",
	"good_request_count":               "GoodRequestCount",
	"goodput":                          "Goodput",
	"input_sequence_length":            "Input Sequence Length",
	"inter_chunk_latency":              "Inter Chunk Latency",
	"inter_token_latency":              "Inter Token Latency",
	"max_response_timestamp":           "Maximum Response Timestamp",
	"min_request_timestamp":            "Minimum Request Timestamp",
	"output_sequence_length":           "Output Sequence Length",
	"output_token_count":               "Output Token Count",
	"output_token_throughput":          "Output Token Throughput",
	"output_token_throughput_per_user": "Output Token Throughput Per User",
	"reasoning_token_count":            "Reasoning Token Count",
	"request_count":                    "Request Count",
	"request_latency":                  "Request Latency",
	"request_throughput":               "Request Throughput",
	"time_to_first_token":              "Time to First Token",
	"time_to_second_token":             "Time to Second Token",
	"total_error_isl":                  "Total Error Input Sequence Length",
	"total_isl":                        "Total Input Sequence Length",
	"total_osl":                        "Total Output Sequence Length",
	"total_output_tokens":              "Total Output Tokens",
	"total_reasoning_tokens":           "Total Reasoning Tokens",
}

// aiperfTag reports whether a tag is one of AIPerf's metrics (of AIPerfCommit or later
// releases), as opposed to llmtap's own (headers_latency, the energy figures).
func aiperfTag(tag string) bool {
	switch tag {
	case stats.TagHeadersLatency, stats.TagGPUEnergy, stats.TagTokensPerJoule, stats.TagJoulesPerOutputToken:
		return false
	}
	return true
}
