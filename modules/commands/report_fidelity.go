package commands

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/llmtap/llmtap/internal/termsafe"
	"github.com/llmtap/llmtap/loadtest"
	"github.com/llmtap/llmtap/report"
	"github.com/llmtap/llmtap/report/fidelity"
	"github.com/llmtap/llmtap/shadow/trace"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// fidelityFlags are the margins of the replay fidelity verdict, shared by `llmtap report
// --compare` and `llmtap replay --compare-to`.
type fidelityFlags struct {
	o      fidelity.Options
	window float64
	traces string
}

func (f *fidelityFlags) register(fs *flag.FlagSet, speedup bool) {
	fs.Float64Var(&f.o.Alpha, "fidelity-alpha", fidelity.DefaultAlpha, "fidelity verdict: the chance of a false difference over all interval comparisons")
	fs.Float64Var(&f.o.Margin, "margin", fidelity.DefaultMargin, "fidelity verdict: equivalence margin of the p50 and p90 ratios (replayed/recorded within 1±margin)")
	fs.Float64Var(&f.o.TailMargin, "tail-margin", fidelity.DefaultTailMargin, "fidelity verdict: equivalence margin of the p99 ratios")
	fs.Float64Var(&f.o.MarginMs, "margin-ms", fidelity.DefaultMarginMs, "fidelity verdict: a time difference up to this many ms never counts (negative: none)")
	fs.Float64Var(&f.o.ErrorMargin, "error-margin", fidelity.DefaultErrorMargin, "fidelity verdict: equivalence margin of the error rates' difference")
	fs.Float64Var(&f.o.PrefixMargin, "prefix-margin", fidelity.DefaultPrefixMargin, "fidelity verdict: equivalence margin of the prefix reuse shares' difference (--compare-traces)")
	fs.Float64Var(&f.o.ArrivalMargin, "arrival-margin", fidelity.DefaultArrivalMargin, "fidelity verdict: equivalence margin of the inter-arrival gaps' CV ratio")
	fs.Float64Var(&f.o.MinRateCorr, "min-rate-corr", fidelity.DefaultMinRateCorr, "fidelity verdict: the least correlation of the per-window request rates")
	fs.Float64Var(&f.window, "rate-window", 0, "fidelity verdict: seconds of a rate window on the recording's clock (0: the recording's span / 20)")
	fs.BoolVar(&f.o.RequireTails, "require-tails", false, "fidelity verdict: a p99 the requests cannot bound holds the verdict at \"not enough requests\"")
	fs.StringVar(&f.traces, "compare-traces", "", "fidelity verdict: RECORDED_TRACE,REPLAYED_TRACE, trace files with hash_ids to compare prefix reuse")
	if speedup {
		fs.Float64Var(&f.o.Speedup, "replay-speedup", 1, "fidelity verdict: the speedup the replay ran at")
	}
}

// options checks the flags and returns the verdict's options.
func (f *fidelityFlags) options() (fidelity.Options, error) {
	o := f.o
	if !(f.window >= 0) {
		return o, fmt.Errorf("--rate-window %v: must not be negative", f.window)
	}
	o.Window = loadtest.Seconds(f.window)
	return o, o.Validate()
}

// side is a loaded run as the verdict takes it, with where its records were measured: at
// the proxy (its recorder's records-*.jsonl, or the demo's records.jsonl) or at the client (a
// bench, replay or AIPerf export, profile_export.jsonl).
func side(run *report.Run) fidelity.Side {
	where := "proxy"
	for _, f := range run.Files {
		if filepath.Base(f) == "profile_export.jsonl" {
			where = "client"
		}
	}
	return fidelity.Side{Name: run.Name, Where: where, Records: run.Records}
}

// loadRuns loads runs and joins them into one (a recording written in several folders or
// files), keeping one class when class is set. Runs measured at different places (the proxy,
// the client) are not joined.
func loadRuns(paths []string, class string) (*report.Run, error) {
	var all *report.Run
	for _, p := range paths {
		run, err := report.Load(p)
		if err != nil {
			return nil, fmt.Errorf("reading run: %w", err)
		}
		if class != "" {
			if err := run.Only(class); err != nil {
				return nil, err
			}
		}
		if run.Skipped > 0 {
			fmt.Fprintf(termsafe.Writer(os.Stderr), "%s: %d lines skipped: %s\n", p, run.Skipped, strings.Join(run.Warnings, "; "))
		}
		if all == nil {
			all = run
			continue
		}
		if a, b := side(all).Where, side(run).Where; a != b {
			return nil, fmt.Errorf("%s: measured at the %s, the runs before it at the %s: join runs measured at one place", p, b, a)
		}
		all.Name += " + " + run.Name
		all.Files = append(all.Files, run.Files...)
		all.Records = append(all.Records, run.Records...)
		all.Timeline = append(all.Timeline, run.Timeline...)
		all.Skipped += run.Skipped
	}
	if all == nil {
		return nil, errors.New("no run given")
	}
	slices.SortStableFunc(all.Records, func(a, b *record.Record) int { return a.Start.Compare(b.Start) })
	slices.SortStableFunc(all.Timeline, func(a, b timeline.Window) int { return a.Start.Compare(b.Start) })
	return all, nil
}

// writeFidelity judges the replayed side against the recorded one and prints the verdict.
func writeFidelity(w io.Writer, rec, rep fidelity.Side, f *fidelityFlags) error {
	o, err := f.options()
	if err != nil {
		return err
	}
	if f.traces != "" {
		paths := strings.Split(f.traces, ",")
		if len(paths) != 2 {
			return fmt.Errorf("--compare-traces %q: want RECORDED_TRACE,REPLAYED_TRACE", f.traces)
		}
		if rec.HashIDs, err = traceHashIDs(paths[0]); err != nil {
			return err
		}
		if rep.HashIDs, err = traceHashIDs(paths[1]); err != nil {
			return err
		}
	}
	v := fidelity.Judge(rec, rep, o)
	if !replayed(rep) {
		// Two runs, neither a replay (two benchmarks compared): name them, not "recorded"
		// and "replayed"; the verdict's rules are the same.
		fmt.Fprintf(w, "comparison of %s to %s (neither is a replay: the fidelity verdict's rules)\n", rep.Name, rec.Name)
		v.Labels = [2]string{"first", "second"}
		return v.Write(w)
	}
	fmt.Fprintf(w, "fidelity of %s (replayed) to %s (recorded)\n", rep.Name, rec.Name)
	return v.Write(w)
}

// replayed reports whether a side holds a replay: records of class replay (a replay's export
// or a proxy's records of replayed requests) or a proxy's recording (the side a replay is
// compared at when it went through the proxy).
func replayed(s fidelity.Side) bool {
	if s.Where == "proxy" || s.Note != "" {
		return true
	}
	return slices.ContainsFunc(s.Records, func(r *record.Record) bool { return r.Class == record.ClassReplay })
}

// traceHashIDs reads a trace's hash ids in time order; a trace without any is an error.
func traceHashIDs(path string) ([][]int64, error) {
	reqs, _, err := trace.ReadSorted(path, trace.Options{}, 0)
	if err != nil {
		return nil, fmt.Errorf("--compare-traces: %w", err)
	}
	ids := make([][]int64, len(reqs))
	has := false
	for i := range reqs {
		ids[i] = reqs[i].HashIDs
		has = has || len(ids[i]) > 0
	}
	if !has {
		return nil, fmt.Errorf("--compare-traces: %s has no hash_ids", path)
	}
	return ids, nil
}

// replayedAtProxy is the replay's side as the llmtap proxy it went through measured it, when
// the records at paths hold its requests (fidelity.AtProxy, waiting up to 10 s for the proxy's
// recorder to flush); otherwise the client's side, with a note saying why.
func replayedAtProxy(ctx context.Context, rep fidelity.Side, paths []string) (fidelity.Side, error) {
	load := func() ([]*record.Record, error) {
		var all []*record.Record
		for _, p := range paths {
			run, err := report.Load(p)
			if err != nil {
				return nil, err
			}
			all = append(all, run.Records...)
		}
		return all, nil
	}
	at, ok, note, err := fidelity.AtProxy(ctx, rep, load, 10*time.Second, 1500*time.Millisecond)
	if err != nil {
		return rep, fmt.Errorf("reading the records of the proxy the replay went through: %w", err)
	}
	if !ok {
		rep.Note = note
		return rep, nil
	}
	return at, nil
}
