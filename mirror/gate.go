package mirror

import (
	"sync"
	"time"
)

// Gate pauses and resumes mirroring. The guard rails hold it: they pause it when live traffic
// suffers and resume it after a cool-down. While it is paused, every sampled request is
// skipped and counted (skipped reason "paused"); requests already sent run to their end. It is
// safe for concurrent use; the zero value is an open gate.
type Gate struct {
	mu     sync.Mutex
	paused bool
	reason string
	since  time.Time
	pauses uint64
}

// GateState is what a Gate reports about itself.
type GateState struct {
	// Paused is true while mirroring is paused.
	Paused bool `json:"paused"`
	// Reason is the reason given to the last Pause, kept while paused.
	Reason string `json:"reason,omitempty"`
	// Since is when the gate last changed state; zero before the first change.
	Since time.Time `json:"since,omitzero"`
	// Pauses counts the times the gate went from open to paused.
	Pauses uint64 `json:"pauses"`
}

// Pause closes the gate, giving a reason (shown in the mirror summary). It reports whether
// the gate was open; pausing a paused gate keeps the first reason.
func (g *Gate) Pause(reason string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused {
		return false
	}
	g.paused, g.reason, g.since = true, reason, time.Now()
	g.pauses++
	return true
}

// Resume opens the gate. It reports whether the gate was paused.
func (g *Gate) Resume() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.paused {
		return false
	}
	g.paused, g.reason, g.since = false, "", time.Now()
	return true
}

// Paused reports whether the gate is paused.
func (g *Gate) Paused() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.paused
}

// State returns the gate's state.
func (g *Gate) State() GateState {
	g.mu.Lock()
	defer g.mu.Unlock()
	return GateState{Paused: g.paused, Reason: g.reason, Since: g.since, Pauses: g.pauses}
}
