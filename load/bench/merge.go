package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// SnapshotFile is the file of a run's Snapshot in its artifact folder.
const SnapshotFile = "profile_export_hdr.json"

// snapshotVersion is the layout of SnapshotFile.
const snapshotVersion = 1

// maxSnapshotBytes bounds a snapshot file read back: one key per model and status class, a
// few tens of KiB of encoded histograms each.
const maxSnapshotBytes = 64 << 20

// Snapshot is what a run measured in a form that merges exactly (profile_export_hdr.json):
// the aggregator's state with every distribution as an HdrHistogram in hdrhistogram-go's
// encoded form (stats.Snapshot), the generator's counters and histograms, the error summary
// and the run's bounds. Merge combines the snapshots of the workers of one split workload
// into the export one process sending the whole workload would have written.
type Snapshot struct {
	Version    int                 `json:"version"`
	Class      string              `json:"class"`
	Worker     Worker              `json:"worker"`
	SLOs       []stats.SLO         `json:"slos"`
	Stats      stats.Snapshot      `json:"stats"`
	Generator  aiperf.Generator    `json:"generator"`
	GenDists   GeneratorDists      `json:"generator_dists"`
	Errors     []aiperf.ErrorCount `json:"errors"`
	Unfinished int64               `json:"unfinished"`
	Start      time.Time           `json:"start"`
	End        time.Time           `json:"end"`
	Cancelled  bool                `json:"cancelled"`
	Info       aiperf.RunInfo      `json:"run_info"`
	Input      aiperf.InputConfig  `json:"input_config"`
	// ErrorISL is the failed requests' input sequence lengths (Export.ErrorISL); absent from
	// snapshots written before llmtap exported error_isl.
	ErrorISL *stats.DistSnapshot `json:"error_isl,omitempty"`
}

// GeneratorDists are the distributions of an aiperf.Generator as mergeable snapshots.
type GeneratorDists struct {
	ScheduleLag      stats.DistSnapshot `json:"schedule_lag"`
	QueueWait        stats.DistSnapshot `json:"queue_wait"`
	EffectiveLatency stats.DistSnapshot `json:"effective_latency"`
}

// snapshot gathers the run's snapshot once its exports are written.
func (s *Spec) snapshot(e aiperf.Export, col *collector) (Snapshot, error) {
	snap := Snapshot{Version: snapshotVersion, Class: s.Class, Worker: s.Worker, SLOs: s.SLOs,
		Errors: e.Errors, Unfinished: e.Unfinished, Start: e.Start, End: e.End, Cancelled: e.Cancelled,
		Info: e.Info, Input: e.Info.Input}
	if snap.Worker.Count == 0 {
		snap.Worker.Count = 1
	}
	var err error
	if snap.Stats, err = col.agg.Snapshot(); err != nil {
		return snap, err
	}
	snap.Generator = e.Generator
	eisl, err := col.errISL.Dist()
	if err != nil {
		return snap, err
	}
	snap.ErrorISL = &eisl
	for _, d := range []struct {
		h   *stats.Hist
		dst *stats.DistSnapshot
	}{{col.lag, &snap.GenDists.ScheduleLag}, {col.wait, &snap.GenDists.QueueWait}, {col.effective, &snap.GenDists.EffectiveLatency}} {
		if *d.dst, err = d.h.Dist(); err != nil {
			return snap, err
		}
	}
	return snap, nil
}

// writeSnapshot writes snap as dir/SnapshotFile.
func writeSnapshot(dir string, snap Snapshot) (string, error) {
	p := filepath.Join(dir, SnapshotFile)
	if err := aiperf.WriteFile(p, func(w io.Writer) error { return json.NewEncoder(w).Encode(snap) }); err != nil {
		return "", err
	}
	return p, nil
}

// ReadSnapshot reads dir/SnapshotFile.
func ReadSnapshot(dir string) (Snapshot, error) {
	var snap Snapshot
	p := filepath.Join(dir, SnapshotFile)
	f, err := os.Open(p)
	if err != nil {
		return snap, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSnapshotBytes+1))
	if err != nil {
		return snap, fmt.Errorf("reading %s: %w", p, err)
	}
	if len(b) > maxSnapshotBytes {
		return snap, fmt.Errorf("%s: over %d MiB, not a snapshot llmtap wrote", p, maxSnapshotBytes>>20)
	}
	if err := json.Unmarshal(b, &snap); err != nil {
		return snap, fmt.Errorf("%s: %w", p, err)
	}
	if snap.Version != snapshotVersion {
		return snap, fmt.Errorf("%s: snapshot version %d, want %d", p, snap.Version, snapshotVersion)
	}
	return snap, nil
}

// MergeSnapshots combines the snapshots of the workers of one split workload into the export
// of the whole and the merged snapshot (which merges again, with others). Distributions merge
// as HdrHistograms, so every percentile is the one the pooled records give, never an average
// of the workers' percentiles; counts and error summaries add; the run spans the earliest
// start to the latest end. The generator's CPU utilization is the busiest worker's (the one
// that could have been the bottleneck). Snapshots of different classes or goodput objectives,
// or two of one worker index, are refused.
func MergeSnapshots(snaps []Snapshot) (aiperf.Export, Snapshot, error) {
	if len(snaps) == 0 {
		return aiperf.Export{}, Snapshot{}, errors.New("no snapshots to merge")
	}
	first := snaps[0]
	out := Snapshot{Version: snapshotVersion, Class: first.Class, Worker: Worker{Count: 1}, SLOs: first.SLOs,
		Info: first.Info, Input: first.Input, Start: first.Start, End: first.End}
	agg := stats.New(stats.Options{SLOs: first.SLOs})
	var errs aiperf.ErrorLog
	seen := map[Worker]bool{}
	var lag, wait, eff, eisl []stats.DistSnapshot
	for i, s := range snaps {
		switch {
		case s.Class != first.Class:
			return aiperf.Export{}, out, fmt.Errorf("snapshot %d is of class %q, the first of %q", i, s.Class, first.Class)
		case !slices.Equal(s.SLOs, first.SLOs):
			return aiperf.Export{}, out, fmt.Errorf("snapshot %d has goodput objectives %v, the first %v", i, s.SLOs, first.SLOs)
		case s.Worker.Split() && seen[s.Worker]:
			return aiperf.Export{}, out, fmt.Errorf("snapshot %d is worker %d of %d again", i, s.Worker.Index, s.Worker.Count)
		}
		seen[s.Worker] = true
		if err := agg.Merge(s.Stats); err != nil {
			return aiperf.Export{}, out, fmt.Errorf("snapshot %d: %w", i, err)
		}
		for _, e := range s.Errors {
			errs.AddN(&e.Details, e.Count)
		}
		out.Unfinished += s.Unfinished
		out.Cancelled = out.Cancelled || s.Cancelled
		if s.Start.Before(out.Start) {
			out.Start = s.Start
		}
		if s.End.After(out.End) {
			out.End = s.End
		}
		g, o := s.Generator, &out.Generator
		o.Scheduled += g.Scheduled
		o.Sent += g.Sent
		o.Dropped += g.Dropped
		o.Late += g.Late
		o.Cancelled += g.Cancelled
		o.RecordsDropped += g.RecordsDropped
		o.CPUUtilization = max(o.CPUUtilization, g.CPUUtilization)
		if s.ErrorISL != nil {
			eisl = append(eisl, *s.ErrorISL)
		}
		d := s.GenDists
		lag, wait, eff = append(lag, d.ScheduleLag), append(wait, d.QueueWait), append(eff, d.EffectiveLatency)
	}
	var err error
	if out.Stats, err = agg.Snapshot(); err != nil {
		return aiperf.Export{}, out, err
	}
	out.Errors = errs.Summary()
	gen := &out.Generator
	gen.LateAfterMs = float64(LateThreshold) / 1e6
	gen.CPUWarning = cpuWarning(gen.CPUUtilization)
	for _, d := range []struct {
		ds  []stats.DistSnapshot
		dst *stats.DistSnapshot
		st  *stats.Stat
	}{{lag, &out.GenDists.ScheduleLag, &gen.ScheduleLag}, {wait, &out.GenDists.QueueWait, &gen.QueueWait}, {eff, &out.GenDists.EffectiveLatency, &gen.EffectiveLatency}} {
		if *d.st, *d.dst, err = stats.MergeDists(stats.HistOptions{}, d.ds...); err != nil {
			return aiperf.Export{}, out, fmt.Errorf("generator: %w", err)
		}
	}
	errISL, errISLSnap, err := stats.MergeDists(aiperf.ISLHistOptions, eisl...)
	if err != nil {
		return aiperf.Export{}, out, fmt.Errorf("error_isl: %w", err)
	}
	out.ErrorISL = &errISLSnap
	out.Info.Input = out.Input
	others := aiperf.ClassGroups(agg.Summary(), out.Class)
	e := aiperf.Export{Group: stats.Combine(others, len(out.SLOs) > 0), Others: others, Generator: *gen, Info: out.Info,
		Start: out.Start, End: out.End, Cancelled: out.Cancelled, SLOs: out.SLOs, Errors: out.Errors,
		Unfinished: out.Unfinished, ErrorISL: errISL}
	return e, out, nil
}

// Merge reads the artifact folders of the workers of one split workload and writes into out
// the export of the whole: profile_export_aiperf.json and .csv from the merged snapshots
// (MergeSnapshots), profile_export.jsonl as every worker's lines (each keeps its worker_id),
// and the merged snapshot. It returns the export and the files written.
func Merge(dirs []string, out string) (aiperf.Export, []string, error) {
	snaps := make([]Snapshot, 0, len(dirs))
	for _, d := range dirs {
		s, err := ReadSnapshot(d)
		if err != nil {
			return aiperf.Export{}, nil, err
		}
		snaps = append(snaps, s)
	}
	e, merged, err := MergeSnapshots(snaps)
	if err != nil {
		return e, nil, err
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return e, nil, fmt.Errorf("creating %s: %w", out, err)
	}
	files, err := aiperf.WriteExports(out, e)
	if err != nil {
		return e, nil, err
	}
	jp, err := aiperf.ConcatLines(dirs, out)
	if err != nil {
		return e, nil, err
	}
	sp, err := writeSnapshot(out, merged)
	if err != nil {
		return e, nil, err
	}
	return e, append(files, jp, sp), nil
}
