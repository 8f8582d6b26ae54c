package commands

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/llmtap/llmtap/internal/termsafe"
	"github.com/llmtap/llmtap/load/bench"
	"github.com/llmtap/llmtap/load/gen"
)

// executeMain runs a prepared spec for a command, serving the Connect API on apiListen while
// it runs (empty: nowhere), shows its progress and notes on stderr, prints the console report and turns the outcome into its exit
// code, with the run's result; hook (tests only) sees the spec before the run and the result after it.
func executeMain(ctx context.Context, spec *bench.Spec, apiListen string, stdout, stderr io.Writer, terminal bool, hook func(*bench.Spec, *bench.Result)) (bench.Result, int, error) {
	if hook != nil {
		hook(spec, nil)
	}
	watchProgress(spec, stderr, terminal)
	api, err := startBenchAPI(apiListen, spec.Label, stderr)
	if err != nil {
		return bench.Result{}, 1, err
	}
	defer api.Close()
	if api != nil {
		spec.Watch = api.setTap
	}
	// The generator allocates per request (the client's buffers, the records) and keeps little:
	// collecting four times less often costs a few MiB and leaves the cores to sending. GOGC in
	// the environment still wins.
	if _, set := os.LookupEnv("GOGC"); !set {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	res, err := bench.Run(ctx, *spec)
	if err == nil {
		err = bench.WriteConsole(termsafe.Writer(stdout), res.Export, res.Duration, res.Files) // model names and error messages are the server's
	}
	if hook != nil {
		hook(spec, &res)
	}
	if err == nil {
		err = res.Failed()
	}
	if err != nil {
		return res, 1, err
	}
	return res, 0, nil
}

// watchProgress makes spec's progress line and notes appear on w: on a terminal the line
// rewrites itself in place every 200 ms (and ends only after the last), in a log it is a line a
// second.
func watchProgress(spec *bench.Spec, w io.Writer, terminal bool) {
	label, total, duration := spec.Label, spec.Total, spec.Schedule.Duration
	spec.OnProgress = func(c gen.Counters, final bool) {
		var b strings.Builder
		fmt.Fprintf(&b, "%s [%6.1fs", label, c.Elapsed.Seconds())
		if duration > 0 {
			fmt.Fprintf(&b, " / %v", duration)
		}
		b.WriteString("] ")
		if total > 0 {
			pct := 100 * float64(c.Sent) / float64(total)
			n := min(20, max(0, int(pct/100*20)))
			fmt.Fprintf(&b, "[%s%s] %3.0f%% ", strings.Repeat("#", n), strings.Repeat(".", 20-n), pct)
		}
		rate := 0.0
		if s := c.Elapsed.Seconds(); s > 0 {
			rate = float64(c.Completed+c.Errors) / s
		}
		fmt.Fprintf(&b, "sent %d  done %d  rate %.1f/s  in flight %d  errors %d  dropped %d",
			c.Sent, c.Completed, rate, c.InFlight, c.Errors, c.Dropped)
		switch {
		case !terminal:
			fmt.Fprintln(w, b.String())
		case final:
			fmt.Fprint(w, "\r", b.String(), "\n")
		default:
			fmt.Fprint(w, "\r", b.String(), "   ")
		}
	}
	spec.ProgressEvery = time.Second
	if terminal {
		spec.ProgressEvery = 200 * time.Millisecond
	}
	spec.OnNote = func(s string) { fmt.Fprintln(w, s) }
}
