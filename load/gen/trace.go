package gen

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Trace arrivals replay recorded send times (AIPerf's --fixed-schedule): request i is due at
// (tsᵢ − ts₀)/speedup, so the first request goes at once and the gaps are the recorded ones
// compressed by the speedup factor (2 = twice as fast). At speedup 1 the offsets are the
// recorded differences exactly; otherwise they are rounded to the nearest nanosecond, each
// computed from the recorded timestamp rather than by adding gaps, so rounding never drifts.
type Trace struct {
	ts      []time.Duration
	speedup float64
	i       int
}

// NewTrace returns arrivals replaying timestamps, which share any origin (a Unix epoch, the
// start of a capture) and must not decrease, at the given speedup, which must be positive and
// finite. The slice is not copied and must not be modified while the Trace is in use.
func NewTrace(timestamps []time.Duration, speedup float64) (*Trace, error) {
	var errs []error
	if !(speedup > 0) || math.IsInf(speedup, 1) {
		errs = append(errs, fmt.Errorf("trace speedup %v must be a positive, finite number", speedup))
	}
	for i := 1; i < len(timestamps); i++ {
		if timestamps[i] < timestamps[i-1] {
			errs = append(errs, fmt.Errorf("trace timestamp %d (%v) is before timestamp %d (%v)",
				i, timestamps[i], i-1, timestamps[i-1]))
			break // one out-of-order pair says the file is not sorted; the rest would be noise
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Trace{ts: timestamps, speedup: speedup}, nil
}

// Len returns the number of arrivals in the trace.
func (t *Trace) Len() int { return len(t.ts) }

// Next returns the next intended send time, or [End] after the last recorded one.
func (t *Trace) Next() time.Duration {
	if t.i >= len(t.ts) {
		return End
	}
	d := t.ts[t.i] - t.ts[0]
	t.i++
	if t.speedup == 1 {
		return d
	}
	return nanos(float64(d) / t.speedup)
}
