package commands

import (
	"flag"
	"fmt"
	"math"
	"time"
)

// defaultRequestTimeout is AIPerf's --request-timeout-seconds default: 6 hours.
const defaultRequestTimeout = 21600

// registerRequestTimeout defines --request-timeout-seconds on fs (bench and replay alike).
func registerRequestTimeout(fs *flag.FlagSet, v *float64) {
	fs.Float64Var(v, "request-timeout-seconds", defaultRequestTimeout, "seconds a request may take before it is cancelled and counted as an error (TimeoutError)")
}

// requestTimeout checks --request-timeout-seconds and turns it into loadtest.Spec's
// RequestTimeout: the request is cancelled that long after it was sent and counted as AIPerf
// counts it (an error of type TimeoutError, no HTTP code).
func requestTimeout(s float64) (time.Duration, error) {
	if !(s > 0) || math.IsInf(s, 0) {
		return 0, fmt.Errorf("--request-timeout-seconds %v: want seconds > 0", s)
	}
	return seconds(s), nil
}
