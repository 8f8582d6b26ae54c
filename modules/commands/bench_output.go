package commands

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmtap/llmtap/shadow/workload"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// artifactName is AIPerf's artifact folder name, <model>-<endpoint>-<mode><value> (for
// example "Qwen_Qwen3-0.6B-openai-chat-concurrency2"), with characters that do not belong in
// a file name replaced by "_".
func artifactName(model, endpoint, mode string) string {
	name := model + "-" + endpoint + "-" + mode
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			return r
		}
		return '_'
	}, name)
}

// formatValue writes a flag value for a folder name: 10, 2.5.
func formatValue(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// createFile creates (or truncates) a file readable by its owner only: exports may hold
// prompts and model names that are not for everyone.
func createFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	// An existing file keeps its mode through O_TRUNC; make sure it is private.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// runInfo is what a run was and how it was invoked, for the JSON export: llmtap's own record
// (run_info) and AIPerf's nested input_config.
type runInfo struct {
	Seed       uint64         `json:"seed"`
	CLICommand string         `json:"cli_command"`
	Mode       string         `json:"mode"`
	Flags      map[string]any `json:"flags"`
	// Input is AIPerf's input_config (its UserConfig), kept out of run_info.
	Input inputConfig `json:"-"`
}

// inputConfig is the part of AIPerf's UserConfig (aiperf/common/config/user_config.py at
// aiperfCommit) a llmtap run has: AIPerf's tools read the model, endpoint type and concurrency
// labels of a run from it. Members AIPerf would reject are left out (its defaults apply): an
// endpoint type it does not know (messages, ollama_chat: run_info.flags has llmtap's), a
// gamma arrival pattern, a duration under its minimum of 1 s, and the request count of a
// duration-based run or the grace period of a count-based one (its validators refuse either).
type inputConfig struct {
	Endpoint struct {
		ModelNames []string `json:"model_names"`
		Type       string   `json:"type,omitempty"`
		Streaming  bool     `json:"streaming"`
		URL        string   `json:"url"`
	} `json:"endpoint"`
	Input struct {
		RandomSeed uint64 `json:"random_seed"`
	} `json:"input"`
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
	} `json:"loadgen"`
	Output struct {
		ArtifactDirectory string   `json:"artifact_directory"`
		SliceDuration     *float64 `json:"slice_duration"`
	} `json:"output"`
	CLICommand string `json:"cli_command"`
}

// newRunInfo describes a parsed bench or replay command line.
func newRunInfo(fs *flag.FlagSet, cli, mode, dir string, seed uint64) runInfo {
	info := runInfo{Seed: seed, CLICommand: cli, Mode: mode, Flags: flagValues(fs)}
	str := func(name string) string {
		if f := fs.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	num := func(name string) float64 { v, _ := strconv.ParseFloat(str(name), 64); return v }
	in := &info.Input
	in.Endpoint.ModelNames = []string{str("model")}
	switch t := str("endpoint-type"); t {
	case workload.EndpointChat, workload.EndpointCompletions:
		in.Endpoint.Type = t
	}
	in.Endpoint.Streaming = str("streaming") == "true"
	in.Endpoint.URL = str("url")
	in.Input.RandomSeed = seed
	if c := int(num("concurrency")); c > 0 {
		in.Loadgen.Concurrency = &c
		in.Loadgen.RequestRateMode = "concurrency_burst"
	}
	if r := num("request-rate"); r > 0 {
		in.Loadgen.RequestRate = &r
		in.Loadgen.RequestRateMode = ""
		if p := str("arrival-pattern"); p == "constant" || p == "poisson" {
			in.Loadgen.RequestRateMode = p
		}
	}
	if d := num("benchmark-duration"); d >= 1 {
		in.Loadgen.BenchmarkDuration = &d
		g := num("benchmark-grace-period")
		if math.IsInf(g, 0) || math.IsNaN(g) {
			g = math.MaxFloat64 // JSON has no infinity
		}
		in.Loadgen.BenchmarkGracePeriod = &g
	} else if n := int(num("request-count")); n > 0 {
		in.Loadgen.RequestCount = &n
	}
	in.Loadgen.WarmupRequestCount = int(num("warmup-request-count"))
	in.Loadgen.RequestCancellationRate = num("request-cancellation-rate")
	in.Loadgen.RequestCancellationDelay = num("request-cancellation-delay")
	in.Output.ArtifactDirectory = dir
	in.CLICommand = cli
	return info
}

// exportSummary is profile_export_aiperf.json: AIPerf's JsonExportData (metrics as top-level
// members by tag, input_config, was_cancelled, error_summary, start_time, end_time), then
// llmtap's additions, which AIPerf's model allows (extra="allow").
type exportSummary struct {
	Group      stats.GroupSummary // the class's requests, all status classes combined
	Others     []stats.GroupSummary
	Generator  generatorReport
	Info       runInfo
	Start, End time.Time
	Cancelled  bool
	SLOs       []stats.SLO
	Errors     []errorCount
	Unfinished int64
}

// aiperfTime writes a time as AIPerf's datetime.isoformat() does, in UTC: no zone, microseconds.
func aiperfTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000") }

// summaryMembers lists the members of profile_export_aiperf.json in order.
func (e exportSummary) summaryMembers() []jsonMember {
	g := e.Group
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
	errs := e.Errors
	if errs == nil {
		errs = []errorCount{}
	}
	return append(m,
		jsonMember{"input_config", e.Info.Input},
		jsonMember{"was_cancelled", e.Cancelled},
		jsonMember{"error_summary", errs},
		jsonMember{"start_time", aiperfTime(e.Start)},
		jsonMember{"end_time", aiperfTime(e.End)},
		// llmtap's additions.
		jsonMember{"aiperf_commit", aiperfCommit},
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

func (e exportSummary) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range e.summaryMembers() {
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

// classGroups returns the cumulative groups of class, the ones AIPerf's export combines.
func classGroups(s stats.Summary, class string) []stats.GroupSummary {
	var out []stats.GroupSummary
	for _, g := range s.Groups {
		if g.Window == stats.WindowCumulative && g.Key.Class == class {
			out = append(out, g)
		}
	}
	return out
}

// writeExports writes profile_export_aiperf.json and .csv into dir.
func writeExports(dir string, e exportSummary) ([]string, error) {
	var files []string
	jp := filepath.Join(dir, "profile_export_aiperf.json")
	f, err := createFile(jp)
	if err != nil {
		return nil, err
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", "  ")
	err = enc.Encode(e)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", jp, err)
	}
	files = append(files, jp)

	cp := filepath.Join(dir, "profile_export_aiperf.csv")
	f, err = createFile(cp)
	if err != nil {
		return nil, err
	}
	err = writeCSV(f, e)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", cp, err)
	}
	return append(files, cp), nil
}

// writeCSV writes profile_export_aiperf.csv as AIPerf's CsvExporter does (aiperfCommit):
// a section "Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std" with a row per
// distribution, a blank line, then "Metric,Value" with a row per single value; rows sorted by
// tag, named "Header (unit)" (no unit for counts of requests), numbers with two decimals.
// Only AIPerf's metrics are written: llmtap's own figures are in the JSON file.
func writeCSV(w io.Writer, e exportSummary) error {
	return stats.WriteAIPerfCSV(w, e.Group, aiperfTag)
}

// aiperfTag reports whether a tag is one of AIPerf's metrics (of aiperfCommit or later
// releases), as opposed to llmtap's own (headers_latency, the energy figures).
func aiperfTag(tag string) bool {
	switch tag {
	case stats.TagHeadersLatency, stats.TagGPUEnergy, stats.TagTokensPerJoule, stats.TagJoulesPerOutputToken:
		return false
	}
	return true
}

// writeConsole prints the AIPerf-style table of the run's requests (every status class
// combined, as AIPerf counts them), the causes of the failures, then the generator's
// self-check and the footer.
func writeConsole(w io.Writer, e exportSummary, dur time.Duration, files []string) error {
	gen, cli := e.Generator, e.Info.CLICommand
	g := e.Group
	if g.Scalars[stats.TagRequestCount].Value+g.Scalars[stats.TagErrorRequestCount].Value == 0 {
		fmt.Fprintln(w, "no request was measured")
	} else if err := stats.WriteTable(w, stats.Summary{Groups: []stats.GroupSummary{g}, SLOs: e.SLOs}); err != nil {
		return err
	}
	writeFailures(w, e.Errors, e.Unfinished)
	ms := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	fmt.Fprintf(w, "\nLoad generator self-check\n")
	fmt.Fprintf(w, "  schedule lag (ms)       p50 %s  p99 %s  max %s  over %v: %d of %d\n",
		ms(gen.ScheduleLag.P50), ms(gen.ScheduleLag.P99), ms(gen.ScheduleLag.Max), lateThreshold, gen.Late, gen.ScheduleLag.Count)
	fmt.Fprintf(w, "  effective latency (ms)  avg %s  p50 %s  p99 %s  (queue wait p99 %s)\n",
		ms(gen.EffectiveLatency.Avg), ms(gen.EffectiveLatency.P50), ms(gen.EffectiveLatency.P99), ms(gen.QueueWait.P99))
	fmt.Fprintf(w, "  scheduled %d  sent %d  dropped %d  cancelled %d  records dropped %d\n",
		gen.Scheduled, gen.Sent, gen.Dropped, gen.Cancelled, gen.RecordsDropped)
	fmt.Fprintf(w, "  generator CPU           %.0f%% of a core\n", 100*gen.CPUUtilization)
	if gen.CPUWarning != "" {
		fmt.Fprintf(w, "  WARNING: %s\n", gen.CPUWarning)
	}
	fmt.Fprintf(w, "\nCLI Command: %s\nBenchmark Duration: %.3f sec\n", cli, dur.Seconds())
	for _, f := range files {
		switch {
		case strings.HasSuffix(f, ".csv"):
			fmt.Fprintf(w, "CSV Export: %s\n", f)
		case strings.HasSuffix(f, ".jsonl"):
			fmt.Fprintf(w, "Records Export: %s\n", f)
		default:
			fmt.Fprintf(w, "JSON Export: %s\n", f)
		}
	}
	return nil
}

// maxConsoleErrors is how many distinct failure causes the console lists.
const maxConsoleErrors = 5

// writeFailures prints why requests failed, most frequent cause first, and how many were still
// open when the grace period ended (left out of the results, as AIPerf does).
func writeFailures(w io.Writer, errs []errorCount, unfinished int64) {
	if len(errs) > 0 {
		fmt.Fprintln(w, "Failed requests by cause:")
		for i, e := range errs {
			if i == maxConsoleErrors {
				fmt.Fprintf(w, "  … and %d more causes (error_summary in the JSON export)\n", len(errs)-i)
				break
			}
			code, typ := "", ""
			if e.Details.Code != nil {
				code = " " + strconv.Itoa(*e.Details.Code)
			}
			if e.Details.Type != nil {
				typ = *e.Details.Type
			}
			fmt.Fprintf(w, "  %d × %s%s: %s\n", e.Count, typ, code, e.Details.Message)
		}
	}
	if unfinished > 0 {
		fmt.Fprintf(w, "%d requests were still open when the grace period ended: left out of the results\n", unfinished)
	}
}
