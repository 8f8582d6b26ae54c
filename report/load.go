package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// maxLine is the longest record line read; a record with a full inter-chunk list is a few
// hundred KiB at most.
const maxLine = 16 << 20

// maxWarnings is how many bad lines a run lists by file:line; the rest are only counted.
const maxWarnings = 5

// Run is what one run left on disk: its request records and, when it was recorded, its
// timeline.
type Run struct {
	// Name labels the run in the report (the folder's name unless set).
	Name string
	// Files are the files read, in order.
	Files []string
	// Records are the request records, ordered by start time.
	Records []*record.Record
	// Skipped counts lines that were not records (bad JSON, no start time); Warnings names the
	// first few by file:line.
	Skipped  int
	Warnings []string
	// Timeline holds the windows of timeline.jsonl when the run wrote one.
	Timeline []TimelineWindow
}

// recordFiles reports whether a file name is one of the record files llmtap writes: the
// proxy recorder's records-<start>.jsonl, the demo's records.jsonl and llmtap bench's (and
// AIPerf's) profile_export.jsonl, whose lines are records with more fields.
func recordFile(name string) bool {
	return strings.HasSuffix(name, ".jsonl") &&
		(strings.HasPrefix(name, "records") || name == "profile_export.jsonl")
}

// timelineFile reports whether a file name is a timeline written beside the records.
func timelineFile(name string) bool {
	return strings.HasPrefix(name, "timeline") && strings.HasSuffix(name, ".jsonl")
}

// Load reads a run from path: a folder holding record files (recorder output, a bench
// artifact folder, a demo output folder) and optionally timeline files, or a single record
// file. A run without a single record is an error, as is a folder with no record file.
func Load(path string) (*Run, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	run := &Run{Name: filepath.Base(filepath.Clean(path))}
	var recs, tls []string
	if st.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			switch name := e.Name(); {
			case e.IsDir():
			case recordFile(name):
				recs = append(recs, filepath.Join(path, name))
			case timelineFile(name):
				tls = append(tls, filepath.Join(path, name))
			}
		}
		if len(recs) == 0 {
			return nil, fmt.Errorf("%s holds no record file (records-*.jsonl, records.jsonl or profile_export.jsonl)", path)
		}
	} else {
		recs = []string{path}
		run.Name = strings.TrimSuffix(run.Name, filepath.Ext(run.Name))
	}
	for _, f := range recs {
		if err := run.readRecords(f); err != nil {
			return nil, err
		}
	}
	for _, f := range tls {
		if err := run.readTimeline(f); err != nil {
			return nil, err
		}
	}
	if len(run.Records) == 0 {
		return nil, fmt.Errorf("%s: no request record in %s (%d lines skipped)", path, strings.Join(recs, ", "), run.Skipped)
	}
	sort.SliceStable(run.Records, func(i, j int) bool { return run.Records[i].Start.Before(run.Records[j].Start) })
	sort.SliceStable(run.Timeline, func(i, j int) bool { return run.Timeline[i].Start.Before(run.Timeline[j].Start) })
	return run, nil
}

// eachLine calls fn with every non-empty line of file and its number.
func eachLine(file string, fn func(n int, line []byte) error) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	return nil
}

func (run *Run) skip(file string, n int, why string) {
	run.Skipped++
	if len(run.Warnings) < maxWarnings {
		run.Warnings = append(run.Warnings, fmt.Sprintf("%s:%d: %s", file, n, why))
	}
}

func (run *Run) readRecords(file string) error {
	run.Files = append(run.Files, file)
	return eachLine(file, func(n int, line []byte) error {
		r := new(record.Record)
		if err := json.Unmarshal(line, r); err != nil {
			run.skip(file, n, "not a record: "+err.Error())
			return nil
		}
		if r.Start.IsZero() {
			run.skip(file, n, "record without a start time")
			return nil
		}
		if r.Class == "" {
			r.Class = record.ClassLive
		}
		run.Records = append(run.Records, r)
		return nil
	})
}

// TimelineWindow is the part of a timeline window the report draws: its start and the GPU
// samples taken in it. Request figures are computed from the records, which hold every
// request, so a report reads the same whether or not a timeline was written.
type TimelineWindow struct {
	Start time.Time
	GPUs  []GPUSample
}

// GPUSample is one GPU's utilization (percent) and power (watts) in a window.
type GPUSample struct {
	Name        string
	Utilization float64
	PowerW      float64
}

// readTimeline reads the GPU samples of a timeline file. It accepts the field names of the
// timeline writer ("start" or "time"; "gpus" or "gpu" as a list of objects with a name or
// index, "utilization"/"util"/"gpu_utilization" and "power_w"/"power"/"power_watts"), and
// ignores windows without GPU samples.
func (run *Run) readTimeline(file string) error {
	run.Files = append(run.Files, file)
	return eachLine(file, func(n int, line []byte) error {
		var w map[string]json.RawMessage
		if err := json.Unmarshal(line, &w); err != nil {
			run.skip(file, n, "not a timeline window: "+err.Error())
			return nil
		}
		var start time.Time
		for _, k := range []string{"start", "time", "t"} {
			if raw, ok := w[k]; ok && json.Unmarshal(raw, &start) == nil {
				break
			}
		}
		if start.IsZero() {
			run.skip(file, n, "timeline window without a start time")
			return nil
		}
		var gpus []map[string]any
		for _, k := range []string{"gpus", "gpu"} {
			if raw, ok := w[k]; ok {
				if err := json.Unmarshal(raw, &gpus); err != nil {
					var one map[string]any
					if json.Unmarshal(raw, &one) == nil && one != nil {
						gpus = []map[string]any{one}
					}
				}
				break
			}
		}
		tw := TimelineWindow{Start: start}
		for i, g := range gpus {
			s := GPUSample{Name: fmt.Sprintf("gpu%d", i)}
			if v, ok := g["name"].(string); ok && v != "" {
				s.Name = v
			} else if v, ok := g["index"].(float64); ok {
				s.Name = fmt.Sprintf("gpu%d", int(v))
			}
			util, uok := firstNumber(g, "utilization", "util", "gpu_utilization", "utilization_pct")
			pow, pok := firstNumber(g, "power_w", "power", "power_watts")
			if !uok && !pok {
				continue
			}
			s.Utilization, s.PowerW = util, pow
			tw.GPUs = append(tw.GPUs, s)
		}
		if len(tw.GPUs) > 0 {
			run.Timeline = append(run.Timeline, tw)
		}
		return nil
	})
}

func firstNumber(m map[string]any, keys ...string) (float64, bool) {
	for _, k := range keys {
		if v, ok := m[k].(float64); ok {
			return v, true
		}
	}
	return 0, false
}

// errNoRuns is returned by Build without a run.
var errNoRuns = errors.New("no run to report")
