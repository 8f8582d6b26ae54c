package commands

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/llmtap/llmtap/load/bench"
	"github.com/llmtap/llmtap/report/fidelity"
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
	o.Window = bench.Seconds(f.window)
	return o, o.Validate()
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
		if rec.HashIDs, err = fidelity.TraceHashIDs(paths[0]); err != nil {
			return fmt.Errorf("--compare-traces: %w", err)
		}
		if rep.HashIDs, err = fidelity.TraceHashIDs(paths[1]); err != nil {
			return fmt.Errorf("--compare-traces: %w", err)
		}
	}
	return fidelity.Compare(w, rec, rep, o)
}
