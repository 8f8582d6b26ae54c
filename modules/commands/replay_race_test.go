//go:build race

package commands

// raceEnabled reports that the race detector is on: it slows every goroutine switch several
// times, so timing bounds are reported rather than asserted.
const raceEnabled = true
