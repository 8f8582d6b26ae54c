package commands

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/llmtap/llmtap/shadow/trace"
)

// traceSelect is replay's choice of what of a trace is sent (trace.Selection), with AIPerf's
// flag names: --trace-session-sample-ratio, and --fixed-schedule-start-offset /
// --fixed-schedule-end-offset in milliseconds of the trace's timestamps.
type traceSelect struct {
	ratio      float64
	start, end msFlag
	auto       bool
}

// msFlag is an optional whole number of milliseconds, ≥ 0.
type msFlag struct {
	set bool
	ms  int64
}

func (f *msFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return strconv.FormatInt(f.ms, 10)
}

func (f *msFlag) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > math.MaxInt64/int64(time.Millisecond) {
		return fmt.Errorf("want a whole number of milliseconds, 0 or more, got %q", s)
	}
	f.set, f.ms = true, v
	return nil
}

// at returns the offset as a duration, nil when unset.
func (f msFlag) at() *time.Duration {
	if !f.set {
		return nil
	}
	d := time.Duration(f.ms) * time.Millisecond
	return &d
}

func (s *traceSelect) register(fs *flag.FlagSet) {
	fs.Float64Var(&s.ratio, "trace-session-sample-ratio", 1, "replay this fraction of the trace's sessions, each whole (a request without a session is a session of one); chosen by --random-seed")
	fs.Var(&s.start, "fixed-schedule-start-offset", "replay only sessions whose first request is at or after this many ms of the trace; the schedule starts at this offset")
	fs.Var(&s.end, "fixed-schedule-end-offset", "replay only sessions whose first request is at or before this many ms of the trace")
	fs.BoolVar(&s.auto, "fixed-schedule-auto-offset", false, "start the schedule at the first replayed request (the default unless --fixed-schedule-start-offset is given)")
}

// errs reports every problem of the flags.
func (s *traceSelect) errs() []error {
	var errs []error
	if !(s.ratio > 0 && s.ratio <= 1) {
		errs = append(errs, fmt.Errorf("--trace-session-sample-ratio %v: want a fraction in (0, 1]", s.ratio))
	}
	if s.auto && s.start.set {
		errs = append(errs, errors.New("--fixed-schedule-auto-offset and --fixed-schedule-start-offset exclude each other (as in AIPerf): the start offset is the schedule's zero"))
	}
	if s.start.set && s.end.set && s.end.ms < s.start.ms {
		errs = append(errs, fmt.Errorf("--fixed-schedule-end-offset %d is before --fixed-schedule-start-offset %d", s.end.ms, s.start.ms))
	}
	return errs
}

// selection is what of the trace the flags choose, with seed's sample.
func (s *traceSelect) selection(seed uint64) trace.Selection {
	return trace.Selection{Ratio: s.ratio, Seed: seed, Start: s.start.at(), End: s.end.at()}
}
