package commands

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/llmtap/llmtap/internal/sample"
	"github.com/llmtap/llmtap/shadow/trace"
)

// traceSelect is replay's choice of what of a trace is sent, with AIPerf's flag names: a
// sample of whole sessions (--trace-session-sample-ratio) and a slice of the schedule
// (--fixed-schedule-start-offset / --fixed-schedule-end-offset, in milliseconds of the trace's
// timestamps). A session is chosen or left out whole, by its first turn.
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

// at returns the offset as a duration.
func (f msFlag) at() time.Duration { return time.Duration(f.ms) * time.Millisecond }

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

// apply keeps the sessions of reqs (sorted by time) whose first request is in the slice and in
// the sample, every turn of each, in order. lead is how long after the schedule's start the
// first kept request is due: its distance from the start offset, when one is given (AIPerf's
// schedule zero), else 0. dropped counts the requests left out.
func (s *traceSelect) apply(reqs []trace.Request, seed uint64) (kept []trace.Request, lead time.Duration, dropped int) {
	coin := sample.New(s.ratio, seed)
	keep := map[string]bool{} // by session id, decided at its first turn
	for i := range reqs {
		q := &reqs[i]
		ok, seen := keep[q.SessionID]
		if q.SessionID == "" || !seen {
			id := q.SessionID
			if id == "" {
				id = "#" + strconv.Itoa(i) // a request without a session: its place in the trace
			}
			ts := q.Timestamp
			ok = (!s.start.set || ts >= s.start.at()) && (!s.end.set || ts <= s.end.at()) && coin.Keep(id)
			if q.SessionID != "" {
				keep[q.SessionID] = ok
			}
		}
		if ok {
			kept = append(kept, *q)
		} else {
			dropped++
		}
	}
	if s.start.set && len(kept) > 0 {
		lead = kept[0].Timestamp - s.start.at()
	}
	return kept, lead, dropped
}

// active reports whether the flags choose anything.
func (s *traceSelect) active() bool { return s.ratio < 1 || s.start.set || s.end.set }
