package aiperf

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/llmtap/llmtap/internal/jsonobj"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// Timeslice export file names, AIPerf's (profile_export_aiperf plus _timeslices).
const (
	TimeslicesJSON = "profile_export_aiperf_timeslices.json"
	TimeslicesCSV  = "profile_export_aiperf_timeslices.csv"
)

// Timeslice is one slice of a run (AIPerf's --slice-duration): its bounds, whether it ran its
// full length, and the summary of the requests that started in it (nil when none did).
type Timeslice struct {
	Start, End time.Time
	Complete   bool
	Group      *stats.GroupSummary
}

// WriteTimeslices writes AIPerf's two timeslice files into dir: the JSON (TimesliceMetricsJsonExporter:
// {"timeslices": [{timeslice_index, start_ns, end_ns, is_complete, <metric tag>:
// JsonMetricResult…}], "input_config"}; the index is the slice's place in the list, which
// AIPerf's newest TimesliceData makes optional and its earlier one required) and the tidy CSV
// (TimesliceMetricsCsvExporter: Timeslice,Metric,Unit,Stat,Value, a row per statistic of each
// metric, metrics by tag, single values as stat "avg").
func WriteTimeslices(dir string, ts []Timeslice, input InputConfig) ([]string, error) {
	list := make([]json.RawMessage, len(ts))
	for i, t := range ts {
		m := []jsonobj.Member{{"timeslice_index", i}, {"start_ns", t.Start.UnixNano()}, {"end_ns", t.End.UnixNano()}, {"is_complete", t.Complete}}
		if t.Group != nil {
			for _, mm := range metricMembers(*t.Group) {
				if aiperfTag(mm.Key) {
					m = append(m, mm)
				}
			}
		}
		b, err := jsonobj.Marshal(m)
		if err != nil {
			return nil, err
		}
		list[i] = b
	}
	doc, err := jsonobj.Marshal([]jsonobj.Member{{"timeslices", list}, {"input_config", input}})
	if err != nil {
		return nil, err
	}
	return writePair(dir, TimeslicesJSON, doc, TimeslicesCSV, func(w io.Writer) error { return writeTimesliceCSV(w, ts) })
}

// writeTimesliceCSV writes the tidy timeslice CSV.
func writeTimesliceCSV(w io.Writer, ts []Timeslice) error {
	headers := map[string]string{}
	for _, mt := range stats.Catalog() {
		headers[mt.Tag] = mt.Header
	}
	keys := stats.AIPerfStatKeys()
	cw := csv.NewWriter(w)
	cw.UseCRLF = true // Python's csv.writer ends rows with \r\n
	cw.Write([]string{"Timeslice", "Metric", "Unit", "Stat", "Value"})
	for i, t := range ts {
		if t.Group == nil {
			continue
		}
		idx := strconv.Itoa(i)
		var tags []string
		for tag := range t.Group.Metrics {
			tags = append(tags, tag)
		}
		for tag := range t.Group.Scalars {
			tags = append(tags, tag)
		}
		slices.Sort(tags)
		for _, tag := range tags {
			if !aiperfTag(tag) || headers[tag] == "" {
				continue
			}
			if st, ok := t.Group.Metrics[tag]; ok {
				for _, k := range keys {
					cw.Write([]string{idx, headers[tag], st.Unit, k, strconv.FormatFloat(st.Get(k), 'f', 2, 64)})
				}
				continue
			}
			sc := t.Group.Scalars[tag]
			cw.Write([]string{idx, headers[tag], sc.Unit, "avg", csvNumber(sc)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvNumber formats a single value as AIPerf's _format_number does: counts (ints in AIPerf) as
// integers, other numbers with two decimals.
func csvNumber(sc stats.Scalar) string {
	if (sc.Unit == "requests" || sc.Unit == "tokens") && sc.Value == math.Trunc(sc.Value) && math.Abs(sc.Value) < 1<<53 {
		return strconv.FormatInt(int64(sc.Value), 10)
	}
	return strconv.FormatFloat(sc.Value, 'f', 2, 64)
}
