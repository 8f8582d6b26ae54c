package aiperf

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/llmtap/llmtap/internal/jsonobj"
	"github.com/llmtap/llmtap/internal/privatefile"
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
// Commit) a llmtap run has: AIPerf's tools read the model, endpoint type and concurrency
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
	Generator  Generator
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

func (e Export) MarshalJSON() ([]byte, error) { return jsonobj.Marshal(e.summaryMembers()) }

// summaryMembers lists the members of profile_export_aiperf.json in order.
func (e Export) summaryMembers() []jsonobj.Member {
	g := e.Group
	m := e.metrics()
	errs := e.Errors
	if errs == nil {
		errs = []ErrorCount{}
	}
	return append(m,
		jsonobj.Member{"input_config", e.Info.Input},
		jsonobj.Member{"was_cancelled", e.Cancelled},
		jsonobj.Member{"error_summary", errs},
		jsonobj.Member{"start_time", aiperfTime(e.Start)},
		jsonobj.Member{"end_time", aiperfTime(e.End)},
		// llmtap's additions.
		jsonobj.Member{"aiperf_commit", Commit},
		jsonobj.Member{"model", g.Key.Model},
		jsonobj.Member{"class", g.Key.Class},
		jsonobj.Member{"unfinished_request_count", e.Unfinished},
		jsonobj.Member{"sources", g.Sources},
		jsonobj.Member{"errors", nonNil(g.Errors)},
		jsonobj.Member{"goodput_objectives", e.SLOs},
		jsonobj.Member{"generator", e.Generator},
		jsonobj.Member{"run_info", e.Info},
		jsonobj.Member{"status_groups", e.Others},
	)
}

// metricMembers lists a group's metrics as members of AIPerf's JsonExportData, by tag, in the
// catalog's order, then its time bounds.
func metricMembers(g stats.GroupSummary) []jsonobj.Member {
	var m []jsonobj.Member
	for _, mt := range stats.Catalog() {
		if mt.Dist {
			if st, ok := g.Metrics[mt.Tag]; ok {
				m = append(m, jsonobj.Member{mt.Tag, st})
			}
		} else if sc, ok := g.Scalars[mt.Tag]; ok {
			m = append(m, jsonobj.Member{mt.Tag, sc})
		}
	}
	if !g.Start.IsZero() {
		m = append(m,
			jsonobj.Member{"min_request_timestamp", stats.Scalar{Unit: "ns", Value: float64(g.Start.UnixNano())}},
			jsonobj.Member{"max_response_timestamp", stats.Scalar{Unit: "ns", Value: float64(g.End.UnixNano())}})
	}
	return m
}

// metrics lists the run's metrics, AIPerf's and llmtap's, as members of JsonExportData.
func (e Export) metrics() []jsonobj.Member {
	m := metricMembers(e.Group)
	if e.ErrorISL.Count > 0 {
		m = append(m, jsonobj.Member{"error_isl", e.ErrorISL},
			jsonobj.Member{"total_error_isl", stats.Scalar{Unit: e.ErrorISL.Unit, Value: e.ErrorISL.Sum}})
	}
	return m
}

func nonNil(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
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

// The file names of a run's exports: the summary (SummaryJSON, SummaryCSV) and a line per
// request (LinesFile).
const (
	SummaryJSON = "profile_export_aiperf.json"
	SummaryCSV  = "profile_export_aiperf.csv"
	LinesFile   = "profile_export.jsonl"
)

// WriteExports writes profile_export_aiperf.json and .csv into dir.
func WriteExports(dir string, e Export) ([]string, error) {
	doc, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return nil, err
	}
	return writePair(dir, SummaryJSON, doc, SummaryCSV, func(w io.Writer) error { return writeCSV(w, e) })
}

// writeCSV writes profile_export_aiperf.csv as AIPerf's CsvExporter does at Commit
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
		header, ok := aiperfHeaders[m.Key]
		if !ok {
			continue
		}
		switch v := m.Value.(type) {
		case stats.Stat:
			cells := []string{csvName(header, v.Unit)}
			for _, k := range stats.AIPerfStatKeys() {
				cells = append(cells, pyFloat(v.Get(k), 2))
			}
			dists = append(dists, row{m.Key, cells})
		case stats.Scalar:
			singles = append(singles, row{m.Key, []string{csvName(header, v.Unit), pyFloat(v.Value, 2)}})
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

// aiperfHeaders are the metrics of AIPerf's MetricRegistry at Commit that its
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

// aiperfTag reports whether a tag is one of AIPerf's metrics (of Commit or later
// releases), as opposed to llmtap's own (headers_latency, the energy figures).
func aiperfTag(tag string) bool {
	switch tag {
	case stats.TagHeadersLatency, stats.TagGPUEnergy, stats.TagTokensPerJoule, stats.TagJoulesPerOutputToken:
		return false
	}
	return true
}

// Generator is the self-check of the load generator (llmtap's "generator" member of the
// summary): whether it sent on time and had
// the CPU to do so. A late or CPU-starved generator measures itself, not the server.
type Generator struct {
	Scheduled   int64   `json:"scheduled"`
	Sent        int64   `json:"sent"`
	Dropped     int64   `json:"dropped"`
	Late        int64   `json:"late"`
	LateAfterMs float64 `json:"late_after_ms"`
	Cancelled   int64   `json:"cancelled"`
	// CPUUtilization is the process's CPU time over the run's wall time: 1 is one core busy.
	CPUUtilization float64    `json:"cpu_utilization"`
	CPUWarning     string     `json:"cpu_warning,omitempty"`
	ScheduleLag    stats.Stat `json:"schedule_lag"`
	QueueWait      stats.Stat `json:"queue_wait"`
	// EffectiveLatency is response end − intended send time: what a user arriving on
	// schedule saw, including any queueing behind a concurrency ceiling and generator lag.
	EffectiveLatency stats.Stat `json:"effective_latency"`
	RecordsDropped   uint64     `json:"records_dropped"`
}

// InputSection is input_config.input: AIPerf's InputConfig, the dataset and the synthetic
// conversations and prompts of a run (aiperf/common/config: input_config.py,
// conversation_config.py, prompt_config.py; the newer members, such as
// dataset_sampling_strategy and the shared system prompt, are from AIPerf's later releases,
// which Commit's models ignore). A member is left out where it has AIPerf's default, or
// where AIPerf's model would refuse llmtap's value (a fractional turn count: AIPerf's is an
// integer).
type InputSection struct {
	RandomSeed              uint64        `json:"random_seed"`
	File                    string        `json:"file,omitempty"`
	CustomDatasetType       string        `json:"custom_dataset_type,omitempty"`
	PublicDataset           string        `json:"public_dataset,omitempty"`
	DatasetSamplingStrategy string        `json:"dataset_sampling_strategy,omitempty"`
	Prompt                  *PromptConfig `json:"prompt,omitempty"`
	Conversation            *Conversation `json:"conversation,omitempty"`
}

// PromptConfig is input.prompt: here only its prefix_prompt.
type PromptConfig struct {
	PrefixPrompt PrefixPrompt `json:"prefix_prompt"`
}

// PrefixPrompt is input.prompt.prefix_prompt: --num-prefix-prompts (pool_size),
// --prefix-prompt-length (length), --shared-system-prompt-length and
// --user-context-prompt-length (AIPerf: at least 1 when given, and not beside a prefix pool).
type PrefixPrompt struct {
	PoolSize                 int  `json:"pool_size"`
	Length                   int  `json:"length"`
	SharedSystemPromptLength *int `json:"shared_system_prompt_length,omitempty"`
	UserContextPromptLength  *int `json:"user_context_prompt_length,omitempty"`
}

// Conversation is input.conversation: --conversation-num (num) and the turns.
type Conversation struct {
	Num  *int `json:"num,omitempty"`
	Turn struct {
		Mean   *int `json:"mean,omitempty"`
		Stddev *int `json:"stddev,omitempty"`
		Delay  struct {
			Mean   float64 `json:"mean"`
			Stddev float64 `json:"stddev"`
			Ratio  float64 `json:"ratio"`
		} `json:"delay"`
	} `json:"turn"`
}

// LoadgenShapes are the members of input_config.loadgen for the shapes over time and over
// runs (AIPerf's LoadGeneratorConfig of its later releases): the user-centric rate, ramps,
// warmup by duration and load, and repeated runs. Each is left out at its default (AIPerf's
// validators refuse the multi-run members beside a single run, and a ramp of 0). A sweep's
// values are not here: each run of a sweep writes its own concurrency (AIPerf's validators
// refuse parameter_sweep_* beside a single concurrency); the sweep is in run_info.flags.
type LoadgenShapes struct {
	UserCentricRate                   *float64 `json:"user_centric_rate,omitempty"`
	NumUsers                          *int     `json:"num_users,omitempty"`
	ConcurrencyRampDuration           *float64 `json:"concurrency_ramp_duration,omitempty"`
	RequestRateRampDuration           *float64 `json:"request_rate_ramp_duration,omitempty"`
	WarmupDuration                    *float64 `json:"warmup_duration,omitempty"`
	WarmupConcurrency                 *int     `json:"warmup_concurrency,omitempty"`
	WarmupRequestRate                 *float64 `json:"warmup_request_rate,omitempty"`
	WarmupConcurrencyRampDuration     *float64 `json:"warmup_concurrency_ramp_duration,omitempty"`
	WarmupRequestRateRampDuration     *float64 `json:"warmup_request_rate_ramp_duration,omitempty"`
	NumProfileRuns                    *int     `json:"num_profile_runs,omitempty"`
	ConfidenceLevel                   *float64 `json:"confidence_level,omitempty"`
	ProfileRunCooldownSeconds         *float64 `json:"profile_run_cooldown_seconds,omitempty"`
	ProfileRunDisableWarmupAfterFirst *bool    `json:"profile_run_disable_warmup_after_first,omitempty"`
}

// WriteFile creates path (privatefile.Create) and writes it with write, through a buffer.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := privatefile.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	if err = write(w); err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writePair writes one export's two files into dir: doc (a JSON document) as jsonName and
// the CSV that writeCSV writes as csvName; it returns their paths.
func writePair(dir, jsonName string, doc []byte, csvName string, writeCSV func(io.Writer) error) ([]string, error) {
	jp := filepath.Join(dir, jsonName)
	if err := WriteFile(jp, func(w io.Writer) error { _, err := w.Write(append(doc, '\n')); return err }); err != nil {
		return nil, err
	}
	cp := filepath.Join(dir, csvName)
	if err := WriteFile(cp, writeCSV); err != nil {
		return nil, err
	}
	return []string{jp, cp}, nil
}
