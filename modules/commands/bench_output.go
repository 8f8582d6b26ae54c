package commands

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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

// runInfo is what a run was and how it was invoked, for the JSON export.
type runInfo struct {
	Seed       uint64         `json:"seed"`
	CLICommand string         `json:"cli_command"`
	Mode       string         `json:"mode"`
	Input      map[string]any `json:"input_config"`
}

// exportSummary is profile_export_aiperf.json: the successful requests' group in AIPerf's
// layout (metrics as top-level members by tag), then llmtap's additions.
type exportSummary struct {
	Group       *stats.GroupSummary
	Others      []stats.GroupSummary
	Generator   generatorReport
	Info        runInfo
	Start, End  time.Time
	Cancelled   bool
	SLOs        []stats.SLO
	ErrorCounts map[string]int64
}

func (e exportSummary) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if e.Group != nil {
		gb, err := json.Marshal(*e.Group)
		if err != nil {
			return nil, err
		}
		b.Write(gb[:len(gb)-1]) // reopen the object to add members
		b.WriteByte(',')
	} else {
		b.WriteByte('{')
	}
	add := []struct {
		k string
		v any
	}{
		{"benchmark_start_time", e.Start}, {"benchmark_end_time", e.End},
		{"was_cancelled", e.Cancelled}, {"goodput_objectives", e.SLOs},
		{"error_summary", e.ErrorCounts}, {"generator", e.Generator}, {"run_info", e.Info},
		{"other_groups", e.Others},
	}
	for i, m := range add {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(m.k)
		vb, err := json.Marshal(m.v)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// splitGroups picks the cumulative group of successful requests of class (the one AIPerf's
// export describes) and returns the other cumulative groups of the class beside it.
func splitGroups(s stats.Summary, class string) (main *stats.GroupSummary, others []stats.GroupSummary, errs map[string]int64) {
	errs = map[string]int64{}
	for _, g := range s.Groups {
		if g.Window != stats.WindowCumulative || g.Key.Class != class {
			continue
		}
		for k, v := range g.Errors {
			errs[k] += v
		}
		if main == nil && g.Key.StatusClass == "2xx" {
			g := g
			main = &g
			continue
		}
		others = append(others, g)
	}
	return main, others, errs
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

// writeCSV writes AIPerf's two CSV sections for the main group, then the generator's figures
// as more Metric,Value rows.
func writeCSV(w io.Writer, e exportSummary) error {
	g := stats.GroupSummary{}
	if e.Group != nil {
		g = *e.Group
	}
	if err := stats.WriteCSV(w, g); err != nil {
		return err
	}
	gen := e.Generator
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	rows := [][]string{
		{"Effective Latency avg (ms)", f(gen.EffectiveLatency.Avg)},
		{"Effective Latency p99 (ms)", f(gen.EffectiveLatency.P99)},
		{"Schedule Lag p50 (ms)", f(gen.ScheduleLag.P50)},
		{"Schedule Lag p99 (ms)", f(gen.ScheduleLag.P99)},
		{"Schedule Lag max (ms)", f(gen.ScheduleLag.Max)},
		{"Queue Wait p99 (ms)", f(gen.QueueWait.P99)},
		{"Dropped Requests (requests)", strconv.FormatInt(gen.Dropped, 10)},
		{"Late Requests (requests)", strconv.FormatInt(gen.Late, 10)},
		{"Cancelled Requests (requests)", strconv.FormatInt(gen.Cancelled, 10)},
		{"Generator CPU Utilization (cores)", f(gen.CPUUtilization)},
	}
	cw := csv.NewWriter(w)
	cw.WriteAll(rows)
	return cw.Error()
}

// writeConsole prints the AIPerf-style tables of every cumulative group of the class, then the
// generator's self-check and the footer.
func writeConsole(w io.Writer, s stats.Summary, class string, gen generatorReport, dur time.Duration, files []string, cli string) error {
	cum := stats.Summary{Time: s.Time, Window: s.Window, SLOs: s.SLOs}
	for _, g := range s.Groups {
		if g.Window == stats.WindowCumulative && g.Key.Class == class {
			cum.Groups = append(cum.Groups, g)
		}
	}
	if len(cum.Groups) == 0 {
		fmt.Fprintln(w, "no request was measured")
	} else if err := stats.WriteTable(w, cum); err != nil {
		return err
	}
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
