package commands

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/llmtap/llmtap/shadow/loadgen"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// lateThreshold is the schedule lag above which an arrival counts as late in the generator's
// self-check: a request sent more than this after its intended time.
const lateThreshold = time.Millisecond

// exportLine is one line of profile_export.jsonl: the per-request record exactly as the proxy
// writes it, plus what only the load generator knows (the schedule) and AIPerf's metadata
// object, so scripts written for either tool read it.
type exportLine struct {
	*record.Record
	N                  int          `json:"n"`
	SessionID          string       `json:"session_id,omitempty"`
	Intended           time.Time    `json:"intended"`
	ScheduleLagMs      float64      `json:"schedule_lag_ms"`
	QueueWaitMs        float64      `json:"queue_wait_ms"`
	EffectiveLatencyMs float64      `json:"effective_latency_ms"`
	WasCancelled       bool         `json:"was_cancelled"`
	SendError          string       `json:"send_error,omitempty"`
	Metadata           exportMeta   `json:"metadata"`
	Metrics            exportMetric `json:"metrics"`
}

// exportMeta is AIPerf's per-request metadata, for the fields llmtap has.
type exportMeta struct {
	XRequestID     string `json:"x_request_id"`
	XCorrelationID string `json:"x_correlation_id,omitempty"`
	RequestStartNs int64  `json:"request_start_ns"`
	RequestEndNs   int64  `json:"request_end_ns"`
	BenchmarkPhase string `json:"benchmark_phase"`
	WasCancelled   bool   `json:"was_cancelled"`
}

// valueUnit is AIPerf's {value, unit} of one per-request metric.
type valueUnit struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// exportMetric is AIPerf's per-request metrics object: the record's figures under AIPerf's
// tags, absent where they do not apply. A struct rather than a map (one fewer map to build and
// sort per line); the fields are in the tags' alphabetical order, the order encoding/json
// writes a map in, so the line is the same either way.
type exportMetric struct {
	EffectiveLatency    *valueUnit   `json:"effective_latency,omitempty"`
	InputSequenceLength *valueUnit   `json:"input_sequence_length,omitempty"`
	InterTokenLatency   *valueUnit   `json:"inter_token_latency,omitempty"`
	OutputTokenCount    *valueUnit   `json:"output_token_count,omitempty"`
	PerUserThroughput   *valueUnit   `json:"output_token_throughput_per_user,omitempty"`
	RequestLatency      *valueUnit   `json:"request_latency,omitempty"`
	TimeToFirstToken    *valueUnit   `json:"time_to_first_token,omitempty"`
	TimeToSecondToken   *valueUnit   `json:"time_to_second_token,omitempty"`
	values              [8]valueUnit // backing store, so that a line allocates its metrics once
	used                int
}

func (m *exportMetric) put(v float64, unit string) *valueUnit {
	p := &m.values[m.used]
	m.used++
	*p = valueUnit{v, unit}
	return p
}

// fill sets the metrics of record r, whose effective latency is effectiveMs.
func (m *exportMetric) fill(r *record.Record, effectiveMs float64) {
	ms := func(p *float64) *valueUnit {
		if p == nil {
			return nil
		}
		return m.put(*p, "ms")
	}
	m.TimeToFirstToken = ms(r.TTFTMs)
	m.TimeToSecondToken = ms(r.TTSTMs)
	m.RequestLatency = ms(r.RequestLatencyMs)
	m.InterTokenLatency = ms(r.ITLMs)
	if r.OK() {
		m.OutputTokenCount = m.put(float64(r.OutputTokens), "tokens")
		m.InputSequenceLength = m.put(float64(r.InputTokens), "tokens")
		if r.ITLMs != nil && *r.ITLMs > 0 {
			m.PerUserThroughput = m.put(1000 / *r.ITLMs, "tokens/sec/user")
		}
	}
	m.EffectiveLatency = m.put(effectiveMs, "ms")
}

// collector joins each request's finalized record (from the tap's pipeline) with its schedule
// stamps (from the load generator) and writes the pair as one export line. Either may arrive
// first; the line is written when both have. It also summarises what proves the generator
// kept up.
type collector struct {
	prefix string // request ids are prefix + n
	phase  string

	mu      sync.Mutex
	pending map[int]*joined

	// wmu serializes writing the lines, which happens outside mu: encoding a line takes
	// microseconds, and the senders' begin and done calls must not wait for it.
	wmu   sync.Mutex
	w     *bufio.Writer // nil: nothing is written (warmup)
	enc   *json.Encoder
	werr  error
	lines int

	effective, lag, wait *stats.Hist
	late, cancelled      int64
	ok, failed           int64

	// keep, in tests, remembers every request's id and intended time.
	keep bool
	sent []sentRequest
}

// sentRequest is a request's id and intended send time, kept for tests.
type sentRequest struct {
	ID       string
	N        int
	Session  string
	Intended time.Time
	Done     time.Duration // offset of the response's end from the run's start
	Start    time.Duration // offset of the request's release
}

type joined struct {
	si  *sendInfo
	rec *record.Record
	out *loadgen.Outcome
}

func newCollector(prefix, phase string, w io.Writer) *collector {
	c := &collector{
		prefix: prefix, phase: phase, pending: map[int]*joined{},
		effective: stats.NewHist(stats.HistOptions{}),
		lag:       stats.NewHist(stats.HistOptions{}),
		wait:      stats.NewHist(stats.HistOptions{}),
	}
	if w != nil {
		c.w = bufio.NewWriterSize(w, 64<<10)
		c.enc = json.NewEncoder(c.w)
	}
	return c
}

func (c *collector) id(n int) string { return c.prefix + strconv.Itoa(n) }

func (c *collector) entry(n int) *joined {
	j := c.pending[n]
	if j == nil {
		j = &joined{}
		c.pending[n] = j
	}
	return j
}

// begin registers a request about to be sent.
func (c *collector) begin(si *sendInfo) {
	c.mu.Lock()
	c.entry(si.n).si = si
	c.mu.Unlock()
}

// Consume takes a finalized record from the tap's pipeline.
func (c *collector) Consume(r *record.Record) {
	n, err := strconv.Atoi(strings.TrimPrefix(r.RequestID, c.prefix))
	if err != nil || !strings.HasPrefix(r.RequestID, c.prefix) {
		return
	}
	var line *exportLine
	c.mu.Lock()
	j := c.entry(n)
	j.rec = r
	if j.out != nil {
		line = c.emit(n, j)
	}
	c.mu.Unlock()
	c.write(line)
}

// done takes a finished request's stamps from the load generator.
func (c *collector) done(out loadgen.Outcome) {
	var line *exportLine
	c.mu.Lock()
	j := c.entry(out.N)
	j.out = &out
	if j.rec != nil {
		line = c.emit(out.N, j)
	}
	c.mu.Unlock()
	c.write(line)
}

// flush writes the requests still waiting for their other half: requests that could not be
// built, records the pipeline dropped. Call it after the tap is flushed.
func (c *collector) flush() error {
	c.mu.Lock()
	var lines []*exportLine
	for n, j := range c.pending {
		if j.out != nil {
			lines = append(lines, c.emit(n, j))
		}
	}
	c.mu.Unlock()
	for _, line := range lines {
		c.write(line)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.w != nil {
		if err := c.w.Flush(); err != nil && c.werr == nil {
			c.werr = err
		}
	}
	return c.werr
}

// write encodes one line of profile_export.jsonl; nil writes nothing.
func (c *collector) write(line *exportLine) {
	if line == nil {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.enc != nil && c.werr == nil {
		if err := c.enc.Encode(line); err != nil {
			c.werr = err
		}
		c.lines++
	}
}

// emit accounts for one finished request and returns its export line, nil when lines are
// not written; c.mu is held.
func (c *collector) emit(n int, j *joined) *exportLine {
	delete(c.pending, n)
	out := j.out
	now := time.Now()
	eff := record.Ms(out.EffectiveLatency())
	c.lag.Record(now, record.Ms(out.Lag()))
	c.wait.Record(now, record.Ms(out.QueueWait()))
	if out.Lag() > lateThreshold {
		c.late++
	}
	rec := j.rec
	if rec == nil {
		rec = &record.Record{RequestID: c.id(n), UsageOutputTokens: -1, Error: record.ErrUpstream}
		if out.Err != nil {
			rec.ErrorMsg = out.Err.Error()
		}
	}
	if rec.OK() {
		c.ok++
		c.effective.Record(now, eff)
	} else {
		c.failed++
	}
	line := &exportLine{
		Record: rec, N: n, ScheduleLagMs: record.Ms(out.Lag()), QueueWaitMs: record.Ms(out.QueueWait()),
		EffectiveLatencyMs: eff,
	}
	if si := j.si; si != nil {
		line.SessionID, line.Intended = si.session, si.intended
		line.WasCancelled = si.canceled.Load()
		if c.keep {
			c.sent = append(c.sent, sentRequest{ID: si.id, N: n, Session: si.session, Intended: si.intended,
				Done: out.Done, Start: out.Released})
		}
	}
	if line.WasCancelled {
		c.cancelled++
	}
	if out.Err != nil {
		line.SendError = out.Err.Error()
	}
	line.Metadata = exportMeta{
		XRequestID: rec.RequestID, XCorrelationID: line.SessionID,
		RequestStartNs: rec.Start.UnixNano(), BenchmarkPhase: c.phase, WasCancelled: line.WasCancelled,
	}
	if !rec.Start.IsZero() {
		line.Metadata.RequestEndNs = rec.Start.Add(time.Duration(rec.DurationMs * float64(time.Millisecond))).UnixNano()
	}
	if c.w == nil {
		return nil
	}
	line.Metrics.fill(rec, eff)
	return line
}
