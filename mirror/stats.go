package mirror

import "sync/atomic"

// Reasons a sampled request is not mirrored.
const (
	SkipOverCap        = "over_cap"        // max_in_flight mirror requests were already running
	SkipBodyTooLarge   = "body_too_large"  // the body was larger than max_body (or than the capture)
	SkipBodyIncomplete = "body_incomplete" // the live request ended before its body was read in full
	SkipPaused         = "paused"          // the gate (guard rails) was paused
	SkipLoop           = "loop"            // the request is itself a mirror copy (it carries the marker header)
	SkipStopped        = "stopped"         // the mirror was being stopped by a config unload
	numSkipReasons     = 6
)

// SkipReasons lists every skip reason, in a fixed order.
var SkipReasons = [numSkipReasons]string{SkipOverCap, SkipBodyTooLarge, SkipBodyIncomplete, SkipPaused, SkipLoop, SkipStopped}

// Stats counts what happened to sampled requests. One Stats is usually shared by every Mirror
// of a process, so the counts survive config reloads. The zero value is ready; it is safe for
// concurrent use.
type Stats struct {
	sampled, sent, completed, failed atomic.Uint64
	cut                              atomic.Uint64
	skipped                          [numSkipReasons]atomic.Uint64
	inFlight                         atomic.Int64
}

// Counters is a snapshot of Stats. Sampled = Sent + the sum of Skipped; Sent = Completed +
// Failed + Cut + InFlight.
type Counters struct {
	// Sampled counts live requests the sample chose for mirroring.
	Sampled uint64 `json:"sampled"`
	// Sent counts mirror requests started.
	Sent uint64 `json:"sent"`
	// Completed counts mirror requests whose response was read to its end with a status
	// below 400.
	Completed uint64 `json:"completed"`
	// Failed counts mirror requests that got no response (refused, timed out), an HTTP status
	// of 400 or more, or a response that broke off.
	Failed uint64 `json:"failed"`
	// Cut counts mirror requests cut by llmtap itself before their response completed: the
	// mirror was stopped by a config reload or shutdown. They are not failures of the mirror
	// upstream and are never paired (the canary verdict does not see them).
	Cut uint64 `json:"cut"`
	// Skipped counts sampled requests not mirrored, by reason (over_cap, body_too_large,
	// body_incomplete, paused, loop, stopped).
	Skipped map[string]uint64 `json:"skipped"`
	// InFlight is the number of mirror requests running now.
	InFlight int64 `json:"in_flight"`
}

// Snapshot returns the counters.
func (s *Stats) Snapshot() Counters {
	c := Counters{
		Sampled:   s.sampled.Load(),
		Sent:      s.sent.Load(),
		Completed: s.completed.Load(),
		Failed:    s.failed.Load(),
		Cut:       s.cut.Load(),
		InFlight:  s.inFlight.Load(),
		Skipped:   make(map[string]uint64, numSkipReasons),
	}
	for i, r := range SkipReasons {
		c.Skipped[r] = s.skipped[i].Load()
	}
	return c
}

func (s *Stats) skip(reason string) {
	for i, r := range SkipReasons {
		if r == reason {
			s.skipped[i].Add(1)
			return
		}
	}
}
