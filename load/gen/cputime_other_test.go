//go:build !unix

package gen

import "time"

// cpuTime is not measured here; BenchmarkPacer then leaves out its cpu-cores figure.
func cpuTime() time.Duration { return 0 }
