package commands

import (
	"bytes"
	"testing"
	"time"

	"github.com/llmtap/llmtap/load/bench"
	"github.com/llmtap/llmtap/load/gen"
)

// TestWatchProgressLine checks the progress line bench and replay print: in a log a whole line
// each time, on a terminal a line rewritten in place and ended only after the last; the bar and
// percentage only where the total is known, the run's length only where it is set.
func TestWatchProgressLine(t *testing.T) {
	t.Parallel()
	c := gen.Counters{Elapsed: 2 * time.Second, Sent: 7, Completed: 4, Errors: 1, InFlight: 2, Dropped: 3}
	for _, tc := range []struct {
		name     string
		spec     bench.Spec
		terminal bool
		want     string
	}{
		{"log", bench.Spec{Label: "bench", Total: 20, Schedule: gen.Config{Duration: 5 * time.Second}}, false,
			"bench [   2.0s / 5s] [#######.............]  35% sent 7  done 4  rate 2.5/s  in flight 2  errors 1  dropped 3\n" +
				"bench [   2.0s / 5s] [#######.............]  35% sent 7  done 4  rate 2.5/s  in flight 2  errors 1  dropped 3\n"},
		{"terminal", bench.Spec{Label: "replay"}, true,
			"\rreplay [   2.0s] sent 7  done 4  rate 2.5/s  in flight 2  errors 1  dropped 3   " +
				"\rreplay [   2.0s] sent 7  done 4  rate 2.5/s  in flight 2  errors 1  dropped 3\n"},
	} {
		var out bytes.Buffer
		spec := tc.spec
		watchProgress(&spec, &out, tc.terminal)
		spec.OnProgress(c, false)
		spec.OnProgress(c, true)
		if out.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, out.String(), tc.want)
		}
	}
}
