package recorder

import (
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// Defaults of the session table (Options.MaxSessions, Options.SessionIdle).
const (
	DefaultMaxSessions = 16384
	DefaultSessionIdle = 30 * time.Minute
)

// sessions remembers, per open session, when the response of its latest turn ended, so that
// the next turn's think time (its delay) can be written. Only the writer goroutine uses it.
//
// It holds at most max sessions (a session id is at most 256 bytes, so about 5 MB at the
// default); a session idle longer than idle (no turn ended since) is forgotten at the next
// sweep. A new session that finds the table full is not tracked: its next turn is written
// without a delay, as a first turn would be, and the loss is counted.
type sessions struct {
	max  int
	idle time.Duration
	ends map[string]time.Time
	// untracked counts sessions turned away by a full table, expired those forgotten idle.
	// Stats reads them from other goroutines.
	untracked, expired atomic.Uint64
}

func newSessions(max int, idle time.Duration) *sessions {
	return &sessions{max: max, idle: idle, ends: map[string]time.Time{}}
}

// turn returns the think time of r's turn, the time between the end of the previous turn's
// response in the same session and r's arrival, and whether r has one (it is not a session's
// first turn, nor the next turn of a session the table could not hold). A turn that arrived
// before the previous one's response ended (the client did not wait) has think time 0. It
// then remembers when r's response ended.
func (s *sessions) turn(r *record.Record) (time.Duration, bool) {
	if r.SessionID == "" {
		return 0, false
	}
	end := r.Start.Add(time.Duration(r.DurationMs * float64(time.Millisecond)))
	prev, ok := s.ends[r.SessionID]
	if !ok {
		if len(s.ends) >= s.max {
			s.untracked.Add(1)
			return 0, false
		}
		s.ends[r.SessionID] = end
		return 0, false
	}
	if end.After(prev) {
		s.ends[r.SessionID] = end
	}
	return max(r.Start.Sub(prev), 0), true
}

// sweep forgets the sessions whose last turn ended more than idle before now.
func (s *sessions) sweep(now time.Time) {
	for id, end := range s.ends {
		if now.Sub(end) > s.idle {
			delete(s.ends, id)
			s.expired.Add(1)
		}
	}
}
