package loadtest

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"math"

	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/llmtap/llmtap/internal/privatefile"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// Timeslice export file names, AIPerf's (profile_export_aiperf plus _timeslices).
const (
	TimeslicesJSON = "profile_export_aiperf_timeslices.json"
	TimeslicesCSV  = "profile_export_aiperf_timeslices.csv"
)

// MaxTimeslices bounds how many slices a run keeps (each is an aggregator of its own):
// records that start past the last one are left out of the timeslice export, and said so.
const MaxTimeslices = 1000

// slicer summarizes a run's records by timeslice, as AIPerf's --slice-duration does
// (MetricsAccumulator at ai-dynamo/aiperf 2026): slice i holds the requests that started in
// [origin + i·d, origin + (i+1)·d), where the origin is the run's first request's start (here
// the moment the first request was handed to the client, a few microseconds before the
// record's start stamp), and each slice is summarized from the same records, with the same
// aggregator and rules, as the whole run. The collector's lock guards it; a nil slicer does
// nothing.
type slicer struct {
	d       time.Duration
	slos    []stats.SLO
	origin  time.Time
	aggs    []*stats.Aggregator
	end     time.Time // the last response's end
	dropped int64     // records past MaxTimeslices
}

func newSlicer(d time.Duration, slos []stats.SLO) *slicer { return &slicer{d: d, slos: slos} }

// begin notes a request about to be sent: the first one sets the origin.
func (s *slicer) begin() {
	if s != nil && s.origin.IsZero() {
		s.origin = time.Now()
	}
}

// add files a record that the run's summary counted; now stands for its start when the record
// has none (a request that could not be built or sent).
func (s *slicer) add(r *record.Record, now time.Time) {
	if s == nil {
		return
	}
	start := r.Start
	if start.IsZero() {
		start = now
	}
	if s.origin.IsZero() || start.Before(s.origin) {
		s.origin = start // not expected: begin comes first
	}
	i := int(start.Sub(s.origin) / s.d)
	if i >= MaxTimeslices {
		s.dropped++
		return
	}
	for len(s.aggs) <= i {
		s.aggs = append(s.aggs, nil)
	}
	if s.aggs[i] == nil {
		s.aggs[i] = stats.New(stats.Options{SLOs: s.slos})
	}
	s.aggs[i].Add(r)
	if end := start.Add(time.Duration(r.DurationMs * float64(time.Millisecond))); end.After(s.end) {
		s.end = end
	}
}

// timeslice is one slice's bounds and summary.
type timeslice struct {
	start, end time.Time
	complete   bool
	group      stats.GroupSummary // zero when no request started in the slice
	has        bool
}

// slices returns the slices, every one from the first to the last that holds a request: the
// last ends at the last response's end and is incomplete when that is before its full length.
func (s *slicer) slices(class string) []timeslice {
	out := make([]timeslice, len(s.aggs))
	for i, a := range s.aggs {
		ts := &out[i]
		ts.start = s.origin.Add(time.Duration(i) * s.d)
		ts.end, ts.complete = ts.start.Add(s.d), true
		if i == len(s.aggs)-1 && s.end.Before(ts.end) {
			ts.end, ts.complete = s.end, false
		}
		if a != nil {
			ts.group = stats.Combine(ClassGroups(a.Summary(), class), len(s.slos) > 0)
			ts.has = true
		}
	}
	return out
}

// writeTimeslices writes AIPerf's two timeslice files into dir: the JSON (TimesliceMetricsJsonExporter:
// {"timeslices": [{timeslice_index, start_ns, end_ns, is_complete, <metric tag>:
// JsonMetricResult…}], "input_config"}; the index is the slice's place in the list, which
// AIPerf's newest TimesliceData makes optional and its earlier one required) and the tidy CSV
// (TimesliceMetricsCsvExporter: Timeslice,Metric,Unit,Stat,Value, a row per statistic of each
// metric, metrics by tag, single values as stat "avg").
func writeTimeslices(dir string, s *slicer, class string, input InputConfig, note func(string, ...any)) ([]string, error) {
	ts := s.slices(class)
	if s.dropped > 0 {
		note("timeslices: %d requests started after the %d-th slice and are left out of %s", s.dropped, MaxTimeslices, TimeslicesJSON)
	}
	list := make([]rawJSON, len(ts))
	for i, t := range ts {
		m := []jsonMember{{"timeslice_index", i}, {"start_ns", t.start.UnixNano()}, {"end_ns", t.end.UnixNano()}, {"is_complete", t.complete}}
		if t.has {
			for _, mm := range metricMembers(t.group) {
				if aiperfTag(mm.k) {
					m = append(m, mm)
				}
			}
		}
		b, err := marshalMembers(m)
		if err != nil {
			return nil, err
		}
		list[i] = b
	}
	doc, err := marshalMembers([]jsonMember{{"timeslices", list}, {"input_config", input}})
	if err != nil {
		return nil, err
	}
	return writePair(dir, TimeslicesJSON, doc, TimeslicesCSV, func(w io.Writer) error { return writeTimesliceCSV(w, ts) })
}

// rawJSON is an encoded JSON value written as is.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

// writeWhole creates path (privatefile.Create) and writes it with write, through a buffer.
func writeWhole(path string, write func(io.Writer) error) error {
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
	if err := writeWhole(jp, func(w io.Writer) error { _, err := w.Write(append(doc, '\n')); return err }); err != nil {
		return nil, err
	}
	cp := filepath.Join(dir, csvName)
	if err := writeWhole(cp, writeCSV); err != nil {
		return nil, err
	}
	return []string{jp, cp}, nil
}

// writeTimesliceCSV writes the tidy timeslice CSV.
func writeTimesliceCSV(w io.Writer, ts []timeslice) error {
	headers := map[string]string{}
	for _, mt := range stats.Catalog() {
		headers[mt.Tag] = mt.Header
	}
	keys := stats.AIPerfStatKeys()
	cw := csv.NewWriter(w)
	cw.UseCRLF = true // Python's csv.writer ends rows with \r\n
	cw.Write([]string{"Timeslice", "Metric", "Unit", "Stat", "Value"})
	for i, t := range ts {
		if !t.has {
			continue
		}
		idx := strconv.Itoa(i)
		var tags []string
		for tag := range t.group.Metrics {
			tags = append(tags, tag)
		}
		for tag := range t.group.Scalars {
			tags = append(tags, tag)
		}
		slices.Sort(tags)
		for _, tag := range tags {
			if !aiperfTag(tag) || headers[tag] == "" {
				continue
			}
			if st, ok := t.group.Metrics[tag]; ok {
				for _, k := range keys {
					cw.Write([]string{idx, headers[tag], st.Unit, k, strconv.FormatFloat(st.Get(k), 'f', 2, 64)})
				}
				continue
			}
			sc := t.group.Scalars[tag]
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
