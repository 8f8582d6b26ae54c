//go:build !unix

package bench

import "time"

// cpuTime returns 0: this system reports no process CPU time, so no utilization is shown.
func cpuTime() time.Duration { return 0 }
