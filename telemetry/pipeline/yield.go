package pipeline

import "time"

// yieldBriefly lets the worker make progress while Flush waits; Flush is for tests and
// shutdown, never for the request path.
func yieldBriefly() { time.Sleep(200 * time.Microsecond) }
