package recorder

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// Defaults of the session table (Options.MaxSessions, Options.SessionIdle).
const (
	DefaultMaxSessions = 16384
	DefaultSessionIdle = 30 * time.Minute
)

// sessions gives a session's later turns their think time (delay) from the end of the
// previous turn of the session offered to the recorder. Submit takes every record with a
// session id through it before filtering and queuing, so a turn left out (sampled out, or
// dropped on a full queue) still ends its session's previous turn, and the next turn's delay
// is from the turn before it, as the client saw it. It is safe for concurrent use.
//
// It holds at most Options.MaxSessions sessions (a session id is at most 256 bytes, so about
// 5 MB at the default); a session idle longer than Options.SessionIdle (no turn ended since)
// is forgotten at the next sweep. A new session that finds the table full is not tracked: its
// next turn is written without a delay, as a first turn would be, and the loss is counted.
type sessions struct {
	mu   sync.Mutex // guards t
	t    *record.Sessions
	idle time.Duration
	// untracked counts sessions turned away by a full table, expired those forgotten idle;
	// Stats reads them from other goroutines.
	untracked, expired atomic.Uint64
}

func newSessions(max int, idle time.Duration) *sessions {
	return &sessions{t: record.NewSessions(max), idle: idle}
}

// turn returns the think time of r's turn, the time between the end of the previous turn's
// response in the same session (its start plus duration_ms) and r's arrival, and whether r
// has one (see record.Sessions.Turn).
func (s *sessions) turn(r *record.Record) (time.Duration, bool) {
	if r.SessionID == "" {
		return 0, false
	}
	end := r.Start.Add(time.Duration(r.DurationMs * float64(time.Millisecond)))
	s.mu.Lock()
	d, ok, full := s.t.Turn(r.SessionID, r.Start, end)
	s.mu.Unlock()
	if full {
		s.untracked.Add(1)
		processSessions.untracked.Add(1)
	}
	return d, ok
}

// sweep forgets the sessions whose last turn ended more than idle before now.
func (s *sessions) sweep(now time.Time) {
	s.mu.Lock()
	n := s.t.Forget(now.Add(-s.idle))
	s.mu.Unlock()
	if n > 0 {
		s.expired.Add(uint64(n))
		processSessions.expired.Add(uint64(n))
	}
}

// processSessions are the session counters of every recorder of the process, closed ones
// included: a recorder's own (Stats) end with it, these do not, so a counter served to
// Prometheus never goes down when a recorder closes on a config reload.
var processSessions struct{ untracked, expired atomic.Uint64 }

// ProcessSessions returns the sessions untracked and expired by every recorder of the process
// since it started (Stats.SessionsUntracked and SessionsExpired, summed over recorders that
// ran and run).
func ProcessSessions() (untracked, expired uint64) {
	return processSessions.untracked.Load(), processSessions.expired.Load()
}
