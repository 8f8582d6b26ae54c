package gen

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Dist summarises a distribution of durations: schedule lag or queue wait.
type Dist struct {
	Count int64
	P50   time.Duration
	P99   time.Duration
	// Max is exact; the percentiles are within 0.1 % (three significant digits).
	Max time.Duration
}

// durationHist is a concurrency-safe HdrHistogram of durations in nanoseconds, from 1 ns to a
// minute at three significant digits (about 220 KB). Longer durations are recorded as a minute
// in the percentiles; Max keeps the true value. The mutex is uncontended in the common case
// (one scheduler goroutine records lag) and costs tens of nanoseconds per request.
type durationHist struct {
	mu  sync.Mutex
	h   *hdrhistogram.Histogram
	max time.Duration
}

const histMax = int64(time.Minute)

func newDurationHist() *durationHist {
	return &durationHist{h: hdrhistogram.New(1, histMax, 3)}
}

func (d *durationHist) record(v time.Duration) {
	v = max(v, 0)
	d.mu.Lock()
	d.h.RecordValue(min(int64(v), histMax)) // in range by construction, so it cannot fail
	d.max = max(d.max, v)
	d.mu.Unlock()
}

func (d *durationHist) dist() Dist {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.h.TotalCount() == 0 {
		return Dist{}
	}
	return Dist{
		Count: d.h.TotalCount(),
		P50:   min(time.Duration(d.h.ValueAtQuantile(50)), d.max),
		P99:   min(time.Duration(d.h.ValueAtQuantile(99)), d.max),
		Max:   d.max,
	}
}
