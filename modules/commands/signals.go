package commands

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// stopGrace is how long a command that handles SIGINT and SIGTERM itself (bench, replay,
// demo, mock, top: they cancel their run and write what they measured) has after the first
// signal before the process exits anyway, so that every command stops within a second
// whatever it is doing (a run of 10^9 workers ignored both signals before).
const stopGrace = 900 * time.Millisecond

// graceful names the commands that stop by themselves on a signal; every other command exits
// on the first one at once, as a Go program does by default.
var graceful = map[string]bool{"bench": true, "replay": true, "demo": true, "mock": true, "top": true}

// exitAfterSignal watches sigs: after the first signal it gives the command grace to return,
// then calls exit with 130 (SIGINT) or 143 (SIGTERM) and says so on warn; a second signal
// exits at once. The returned function stops the watch (the command returned).
func exitAfterSignal(name string, sigs <-chan os.Signal, grace time.Duration, warn io.Writer, exit func(int)) (stop func()) {
	done := make(chan struct{})
	go func() {
		var s os.Signal
		select {
		case s = <-sigs:
		case <-done:
			return
		}
		code := 130
		if s == syscall.SIGTERM {
			code = 143
		}
		if grace > 0 {
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-t.C:
				fmt.Fprintf(warn, "llmtap %s: still running %v after %v; exiting\n", name, grace, s)
			case s = <-sigs:
				fmt.Fprintf(warn, "llmtap %s: %v again; exiting\n", name, s)
			case <-done:
				return
			}
		}
		exit(code)
	}()
	return func() { close(done) }
}
