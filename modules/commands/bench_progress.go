package commands

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/llmtap/llmtap/loadtest"
	"github.com/llmtap/llmtap/shadow/loadgen"
)

// watchProgress makes spec's progress line and notes appear on w: on a terminal the line
// rewrites itself in place every 200 ms, in a log it is a line a second.
func watchProgress(spec *loadtest.Spec, w io.Writer, terminal bool) {
	p := &progress{w: w, terminal: terminal, label: spec.Label, total: spec.Total, duration: spec.Schedule.Duration}
	spec.OnProgress, spec.ProgressEvery = p.show, time.Second
	if terminal {
		spec.ProgressEvery = 200 * time.Millisecond
	}
	spec.OnNote = func(s string) { fmt.Fprintln(w, s) }
}

// progress prints the live status line of a run.
type progress struct {
	w        io.Writer
	terminal bool
	label    string
	total    int           // requests to send, 0 when unknown
	duration time.Duration // length of the run, 0 when unknown
}

func (p *progress) line(c loadgen.Counters) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%6.1fs", p.label, c.Elapsed.Seconds())
	if p.duration > 0 {
		fmt.Fprintf(&b, " / %v", p.duration)
	}
	b.WriteString("] ")
	if p.total > 0 {
		pct := 100 * float64(c.Sent) / float64(p.total)
		fmt.Fprintf(&b, "%s %3.0f%% ", bar(pct, 20), pct)
	}
	rate := 0.0
	if s := c.Elapsed.Seconds(); s > 0 {
		rate = float64(c.Completed+c.Errors) / s
	}
	fmt.Fprintf(&b, "sent %d  done %d  rate %.1f/s  in flight %d  errors %d  dropped %d",
		c.Sent, c.Completed, rate, c.InFlight, c.Errors, c.Dropped)
	return b.String()
}

func bar(pct float64, width int) string {
	n := min(width, max(0, int(pct/100*float64(width))))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}

// show writes the line: on a terminal it returns to the line's start first, and ends the line
// only after the last.
func (p *progress) show(c loadgen.Counters, final bool) {
	switch {
	case !p.terminal:
		fmt.Fprintln(p.w, p.line(c))
	case final:
		fmt.Fprint(p.w, "\r", p.line(c), "\n")
	default:
		fmt.Fprint(p.w, "\r", p.line(c), "   ")
	}
}
