package trace

import (
	"fmt"
	"strconv"
	"time"

	"github.com/llmtap/llmtap/internal/sample"
)

// Selection is what of a trace a replay sends, with AIPerf's meanings: a sample of whole
// sessions (--trace-session-sample-ratio) and a slice of the schedule
// (--fixed-schedule-start-offset / --fixed-schedule-end-offset, in the trace's time). A session
// is chosen or left out whole, by its first turn; a request without a session is a session of
// one.
type Selection struct {
	// Ratio is the fraction of sessions kept, in (0, 1]; which ones Seed decides.
	Ratio float64
	Seed  uint64
	// Start and End, when set, bound the time of a kept session's first turn (both included);
	// the schedule then starts at Start (AIPerf's schedule zero).
	Start, End *time.Duration
}

// Active reports whether the selection leaves anything out.
func (s Selection) Active() bool { return s.Ratio < 1 || s.Start != nil || s.End != nil }

// Apply keeps the sessions of reqs (sorted by time) whose first request is in the slice and in
// the sample, every turn of each, in order. lead is how long after the schedule's start the
// first kept request is due: its distance from Start, when set, else 0. dropped counts the
// requests left out.
func (s Selection) Apply(reqs []Request) (kept []Request, lead time.Duration, dropped int) {
	coin := sample.New(s.Ratio, s.Seed)
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
			ok = (s.Start == nil || ts >= *s.Start) && (s.End == nil || ts <= *s.End) && coin.Keep(id)
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
	if s.Start != nil && len(kept) > 0 {
		lead = kept[0].Timestamp - *s.Start
	}
	return kept, lead, dropped
}

// ReadSelected reads what a replay sends of the trace at path: its first maxN requests (0 =
// all) in arrival order (ReadSorted), of which sel, when active, keeps whole sessions (Apply),
// chosen then being told how many requests were kept and left out. lead is Apply's. It is an
// error when no request is left.
func ReadSelected(path string, opt Options, maxN int, sel Selection, chosen func(kept, dropped int)) (reqs []Request, info Info, lead time.Duration, err error) {
	if reqs, info, err = ReadSorted(path, opt, maxN); err != nil {
		return nil, info, 0, err
	}
	if sel.Active() {
		var dropped int
		reqs, lead, dropped = sel.Apply(reqs)
		chosen(len(reqs), dropped)
		if len(reqs) == 0 {
			return nil, info, 0, fmt.Errorf("%s: no session's first request is in the chosen slice and sample", path)
		}
	}
	if len(reqs) == 0 {
		return nil, info, 0, fmt.Errorf("%s: no requests", path)
	}
	return reqs, info, lead, nil
}

// Model is the model the trace's requests name: the first one named, "" when none is.
func Model(reqs []Request) string {
	for i := range reqs {
		if reqs[i].Model != "" {
			return reqs[i].Model
		}
	}
	return ""
}
