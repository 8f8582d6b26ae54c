package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/format/parquetfile"
	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/timeline"
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
	// Timeline holds the windows with GPU figures of the timeline files the run wrote, if any.
	Timeline []timeline.Window
	// AIPerf is set when the run's records were written by NVIDIA AIPerf; ExportedRequests is
	// then the request_count of its profile_export_aiperf.json (-1 without one), which the
	// records read must match.
	AIPerf           bool
	ExportedRequests float64

	model string // the model an AIPerf summary beside the records names
}

// recordFile reports whether a file name is one of the record files llmtap writes: the
// proxy recorder's records-<start>.jsonl, the demo's records.jsonl and llmtap bench's (and
// AIPerf's) profile_export.jsonl, whose lines are records with more fields.
func recordFile(name string) bool {
	return strings.HasSuffix(name, ".jsonl") &&
		(strings.HasPrefix(name, recfile.KindRecords) || name == aiperf.LinesFile)
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
	run := &Run{Name: filepath.Base(filepath.Clean(path)), ExportedRequests: -1}
	var recs, tls []string
	dir := path
	if !st.IsDir() {
		dir = filepath.Dir(path)
	}
	sum, ok, err := aiperf.ReadSummary(dir)
	if err != nil {
		return nil, err
	}
	if ok {
		run.model, run.ExportedRequests = sum.Model, sum.RequestCount()
	}
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
		if len(recs) == 0 && parquetfile.Is(path) {
			// The recorder's Parquet files, in hourly partitions below the folder.
			if recs, err = parquetfile.Files(path, recfile.KindRecords); err != nil {
				return nil, err
			}
		}
		if len(recs) == 0 {
			if runs := sweepRuns(path); len(runs) > 0 {
				// A sweep's or repeated runs' folder holds runs of different settings (or
				// repeats to compare): one report of them all would mix them.
				return nil, fmt.Errorf("%s is a sweep's or repeated runs' folder (%d runs: %s): report one run, or compare two with --compare; the statistics across the runs are in its aggregate folders (profile_export_aiperf_aggregate.json)", path, len(runs), strings.Join(runs[:min(len(runs), 6)], ", "))
			}
			return nil, fmt.Errorf("%s holds no record file (records-*.jsonl, records.jsonl, profile_export.jsonl or records-*.parquet in partitions)", path)
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

// Only keeps the records of one traffic class, and names the run after it ("rec · mirror"),
// so that two classes of one recording can be compared as two runs. A class with no record is
// an error that lists the classes the run has.
func (run *Run) Only(class string) error {
	var kept []*record.Record
	classes := map[string]bool{}
	for _, r := range run.Records {
		classes[r.Class] = true
		if r.Class == class {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		names := make([]string, 0, len(classes))
		for c := range classes {
			names = append(names, c)
		}
		sort.Strings(names)
		return fmt.Errorf("%s has no request of class %q; its classes: %s", run.Name, class, strings.Join(names, ", "))
	}
	run.Records = kept
	run.Name += " · " + class
	return nil
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
	if strings.HasSuffix(file, parquetfile.Ext) {
		return run.readParquet(file)
	}
	return eachLine(file, func(n int, line []byte) error {
		r, fromAIPerf, why := aiperf.ParseLine(line, run.model)
		if r == nil {
			if why != "" {
				run.skip(file, n, why)
			}
			return nil
		}
		run.AIPerf = run.AIPerf || fromAIPerf
		run.Records = append(run.Records, r)
		return nil
	})
}

// readParquet reads the records of a Parquet file the recorder wrote: each row is the record
// its JSONL line holds.
func (run *Run) readParquet(file string) error {
	rd, err := parquetfile.Open[parquetfile.RecordRow](file)
	if err != nil {
		return err
	}
	defer rd.Close()
	for {
		row, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		r := row.Record()
		if r.Start.IsZero() {
			run.skip(file, int(rd.Row()), "record without a start time")
			continue
		}
		if r.Class == "" {
			r.Class = record.ClassLive
		}
		run.Records = append(run.Records, r)
	}
}

// readTimeline reads the windows of a timeline file the proxy wrote beside its records
// (telemetry/timeline.Window per line); the report draws their GPU figures.
func (run *Run) readTimeline(file string) error {
	run.Files = append(run.Files, file)
	return eachLine(file, func(n int, line []byte) error {
		var w timeline.Window
		if err := json.Unmarshal(line, &w); err != nil {
			run.skip(file, n, "not a timeline window: "+err.Error())
			return nil
		}
		if w.Start.IsZero() {
			run.skip(file, n, "timeline window without a start time")
			return nil
		}
		if len(w.GPUs) > 0 {
			run.Timeline = append(run.Timeline, w)
		}
		return nil
	})
}

// sweepRuns lists the run folders of a bench sweep or of repeated runs below dir (AIPerf's
// layout: concurrency_<v>/, profile_runs/run_<NNNN>/ and both nested), each holding a
// profile_export.jsonl; empty for another folder.
func sweepRuns(dir string) []string {
	var runs []string
	for _, pattern := range []string{"concurrency_*", "profile_runs/run_*", "profile_runs/run_*/concurrency_*", "concurrency_*/profile_runs/run_*"} {
		matches, _ := filepath.Glob(filepath.Join(dir, pattern, "profile_export.jsonl"))
		for _, m := range matches {
			rel, _ := filepath.Rel(dir, filepath.Dir(m))
			runs = append(runs, rel)
		}
	}
	return runs
}
