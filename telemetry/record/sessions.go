package record

import "time"

// Sessions remembers, for each open session, when its latest turn's response ended, so that
// the next turn gets its think time: the Delay of Mooncake's and AIPerf's multi-turn rows.
// It holds at most a fixed number of sessions. It is not safe for concurrent use.
type Sessions struct {
	max  int
	ends map[string]time.Time
}

// NewSessions returns a table of at most max sessions.
func NewSessions(max int) *Sessions {
	return &Sessions{max: max, ends: map[string]time.Time{}}
}

// Turn takes a turn of session id that arrived at start and whose response ended at end, and
// returns its think time: start minus the end of the session's previous turn, 0 when it
// arrived before that ended (the client did not wait). ok is false for a session's first turn
// and for a session the table does not hold; full reports a new session turned away because
// the table is full (its next turn has no think time either).
func (s *Sessions) Turn(id string, start, end time.Time) (delay time.Duration, ok, full bool) {
	prev, seen := s.ends[id]
	if !seen {
		if len(s.ends) >= s.max {
			return 0, false, true
		}
		s.ends[id] = end
		return 0, false, false
	}
	if end.After(prev) {
		s.ends[id] = end
	}
	return max(start.Sub(prev), 0), true, false
}

// Forget drops the sessions whose latest turn ended before cutoff and returns how many.
func (s *Sessions) Forget(cutoff time.Time) int {
	n := 0
	for id, end := range s.ends {
		if end.Before(cutoff) {
			delete(s.ends, id)
			n++
		}
	}
	return n
}

// Len returns the number of sessions held.
func (s *Sessions) Len() int { return len(s.ends) }
