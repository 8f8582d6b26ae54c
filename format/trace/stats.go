package trace

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/llmtap/llmtap/internal/limits"
)

// Summary is the shape of a trace: how many requests arrived, how fast and how burstily, how
// long their prompts and outputs were, and how much of their prompts repeated earlier prefix
// blocks. The definitions are those of the reference statistics in testdata/README.md:
// percentiles interpolate linearly between order statistics, rate is (N−1)/span, and the IAT
// CV is the population standard deviation of inter-arrival gaps over their mean.
type Summary struct {
	Requests int `json:"requests"`
	// Failures counts requests the source marked failed; they are included in every other
	// figure, because they arrived like the rest.
	Failures int `json:"failures"`
	// SpanSeconds is the last arrival minus the first.
	SpanSeconds float64 `json:"span_s"`
	// Rate is (Requests−1)/SpanSeconds: the mean arrival rate between first and last request.
	Rate float64 `json:"rate_rps"`
	// PeakMinuteRate is the largest number of arrivals in one whole minute, divided by 60.
	// Minutes are counted from the first arrival ([t0, t0+60 s), [t0+60 s, t0+120 s), …), so
	// the figure is deterministic, and only the minutes that end by the last arrival count: a
	// trailing part of a minute, divided by 60, would understate its rate. A trace that spans
	// less than a minute has no whole minute: both fields are then 0 (the mean is Rate).
	// PeakMinuteStart is that minute's start, in seconds from t0.
	PeakMinuteRate  float64 `json:"peak_minute_rps"`
	PeakMinuteStart float64 `json:"peak_minute_start_s"`
	// DistinctTimestamps counts different arrival times; far below Requests it reveals a
	// trace whose timestamps were quantised into slots.
	DistinctTimestamps int `json:"distinct_timestamps"`
	// IATCV is std/mean of the gaps between consecutive arrivals (sorted by time): 1 for a
	// Poisson process, above 1 for bursty traffic. Zero when there are fewer than two gaps'
	// worth of requests or all arrive at once.
	IATCV  float64 `json:"iat_cv"`
	Input  Dist    `json:"input_tokens"`
	Output Dist    `json:"output_tokens"`
	// HashBlocks counts hash ids over all requests; ReusedBlocks those whose id was already
	// seen in an earlier request (file order, which is arrival order for sorted traces), and
	// PrefixReuse their ratio: the fraction of prompt blocks a perfect, unbounded prefix cache
	// would have held. Zero for traces without hash ids.
	HashBlocks   int     `json:"hash_blocks"`
	ReusedBlocks int     `json:"reused_blocks"`
	PrefixReuse  float64 `json:"prefix_reuse"`
}

// Dist summarises token counts.
type Dist struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Min  int     `json:"min"`
	Max  int     `json:"max"`
	Sum  int64   `json:"sum"`
}

// Collector accumulates a Summary from a stream of requests. It keeps the timestamps and token
// counts (percentiles need them all) and the set of hash ids seen, not the requests.
type Collector struct {
	times    []time.Duration
	in, out  []int
	failures int
	seen     map[int64]struct{}
	blocks   int
	reused   int
	// maxRows and maxIDs are limits.MaxTraceRows and limits.MaxDistinctHashIDs (smaller in
	// tests).
	maxRows, maxIDs int
}

// NewCollector returns an empty Collector.
func NewCollector() *Collector {
	return &Collector{seen: make(map[int64]struct{}), maxRows: limits.MaxTraceRows, maxIDs: limits.MaxDistinctHashIDs}
}

// Add counts one request. It refuses the request that would pass limits.MaxTraceRows rows,
// or limits.MaxDistinctHashIDs hash ids, so that the counts stay within memory.
func (c *Collector) Add(r Request) error {
	if len(c.times) >= c.maxRows {
		return fmt.Errorf("more than %d requests: over the limit of trace stats (limits.MaxTraceRows); split the file", c.maxRows)
	}
	if len(c.seen)+len(r.HashIDs) > c.maxIDs {
		return fmt.Errorf("more than %d distinct hash ids: over the limit of trace stats' prefix-reuse count (limits.MaxDistinctHashIDs); split the file", c.maxIDs)
	}
	c.times = append(c.times, r.Timestamp)
	c.in = append(c.in, r.InputLength)
	c.out = append(c.out, r.OutputLength)
	if r.Failed {
		c.failures++
	}
	c.blocks += len(r.HashIDs)
	for _, id := range r.HashIDs {
		if _, ok := c.seen[id]; ok {
			c.reused++
		}
	}
	// Ids repeated inside one request are not reuse of an earlier request, so the set is
	// updated only after the request has been counted.
	for _, id := range r.HashIDs {
		c.seen[id] = struct{}{}
	}
	return nil
}

// Summary computes the statistics of everything added so far.
func (c *Collector) Summary() Summary {
	s := Summary{Requests: len(c.times), Failures: c.failures, HashBlocks: c.blocks, ReusedBlocks: c.reused}
	if s.Requests == 0 {
		return s
	}
	s.Input, s.Output = dist(c.in), dist(c.out)
	if c.blocks > 0 {
		s.PrefixReuse = float64(c.reused) / float64(c.blocks)
	}
	times := slices.Clone(c.times)
	slices.Sort(times)
	s.DistinctTimestamps = 1
	for i := 1; i < len(times); i++ {
		if times[i] != times[i-1] {
			s.DistinctTimestamps++
		}
	}
	span := times[len(times)-1] - times[0]
	s.SpanSeconds = span.Seconds()
	if span > 0 {
		s.Rate = float64(s.Requests-1) / s.SpanSeconds
	}
	s.PeakMinuteRate, s.PeakMinuteStart = peakMinute(times)
	s.IATCV = iatCV(times)
	return s
}

// FileSummary is one file's Summary with what its reading skipped: the entry of `llmtap trace
// stats --json`.
type FileSummary struct {
	File         string `json:"file"`
	Format       string `json:"format"`
	TornLine     int    `json:"torn_line,omitempty"`
	Skipped      int    `json:"skipped_lines,omitempty"`
	FirstSkipped string `json:"first_skipped,omitempty"`
	Summary
}

// SummarizeFile streams the trace file at path through a Collector, so memory holds counts, not
// requests.
func SummarizeFile(path string, opt Options) (FileSummary, error) {
	rd, err := Open(path, opt)
	if err != nil {
		return FileSummary{}, err
	}
	defer rd.Close()
	c := NewCollector()
	for req, err := range rd.All() {
		if err != nil {
			return FileSummary{}, err
		}
		if err := c.Add(req); err != nil {
			return FileSummary{}, fmt.Errorf("%s:%d: %w", path, rd.Info().Lines, err)
		}
	}
	info := rd.Info()
	st := FileSummary{File: path, Format: info.Format.String(), TornLine: info.Torn, Skipped: info.Skipped, Summary: c.Summary()}
	if info.FirstSkipped != nil {
		st.FirstSkipped = info.FirstSkipped.Error()
	}
	return st, nil
}

// peakMinute finds the busiest whole minute of sorted arrival times, minutes aligned to the
// first; it returns zeros when they span less than a minute.
func peakMinute(times []time.Duration) (rate, start float64) {
	best, bestMin := 0, int64(0)
	cur, curMin := 0, int64(0)
	whole := int64((times[len(times)-1] - times[0]) / time.Minute)
	for _, t := range times {
		m := int64((t - times[0]) / time.Minute)
		if m >= whole {
			break // the trailing part of a minute
		}
		if m != curMin {
			cur, curMin = 0, m
		}
		cur++
		if cur > best {
			best, bestMin = cur, curMin
		}
	}
	return float64(best) / 60, float64(bestMin * 60)
}

// iatCV is the population standard deviation of the gaps between sorted arrival times over
// their mean, computed in two passes for accuracy.
func iatCV(times []time.Duration) float64 {
	n := len(times) - 1
	if n < 1 {
		return 0
	}
	mean := float64(times[n]-times[0]) / float64(n)
	if mean == 0 {
		return 0
	}
	var ss float64
	for i := 1; i <= n; i++ {
		d := float64(times[i]-times[i-1]) - mean
		ss += d * d
	}
	return math.Sqrt(ss/float64(n)) / mean
}

// dist summarises counts with linearly interpolated percentiles.
func dist(v []int) Dist {
	s := slices.Clone(v)
	slices.Sort(s)
	d := Dist{Min: s[0], Max: s[len(s)-1]}
	for _, x := range s {
		d.Sum += int64(x)
	}
	d.Mean = float64(d.Sum) / float64(len(s))
	d.P50, d.P90, d.P99 = Percentile(s, 50), Percentile(s, 90), Percentile(s, 99)
	return d
}

// Percentile returns the p-th percentile (0–100) of sorted values, interpolating linearly
// between the two nearest order statistics at rank p/100·(n−1): numpy's default ("linear",
// Hyndman and Fan type 7), the definition the reference statistics use. It returns 0 for no
// values.
func Percentile(sorted []int, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	h := p / 100 * float64(n-1)
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return float64(sorted[n-1])
	}
	if lo < 0 {
		return float64(sorted[0])
	}
	return float64(sorted[lo]) + (h-float64(lo))*float64(sorted[lo+1]-sorted[lo])
}
