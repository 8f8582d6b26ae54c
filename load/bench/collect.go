package bench

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// LateThreshold is the schedule lag above which an arrival counts as late in the generator's
// self-check: a request sent more than this after its intended time.
const LateThreshold = time.Millisecond

// llmtapWorker is the worker_id and record_processor_id of every line: one process sent,
// measured and recorded every request. A worker of a split workload (Spec.Worker) writes
// llmtapWorker-<index>.
const llmtapWorker = "llmtap"

// collector joins each request's finalized record (from the tap's pipeline) with its schedule
// stamps (from the load generator) and writes the pair as one export line. Either may arrive
// first; the line is written when both have. It also summarises what proves the generator
// kept up.
type collector struct {
	prefix string // request ids are prefix + n
	phase  string
	worker string // worker_id and record_processor_id

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

	// agg summarizes the lines as AIPerf's exports count them: 2xx responses without content
	// are errors, and requests cut at the end of the grace period are left out; nil in warmup.
	agg *stats.Aggregator
	// cut is set when the grace period ends; requests that fail after it were still open and
	// are left out of the results (AIPerf's rule), counted in unfinished.
	cut        atomic.Bool
	unfinished int64
	errs       aiperf.ErrorLog
	// errISL holds the input sequence lengths of the failed requests (AIPerf's error_isl).
	errISL *stats.Hist
	// sessions numbers the sessions in the order their first request was sent, for the
	// session_num of requests whose session has no index of its own.
	sessions map[string]int

	// in collects the bodies sent for inputs.json; nil in warmup.
	in *aiperf.Inputs

	// slices, when set, summarizes the records by timeslice as agg does the whole run.
	slices *slicer
	// onRecord is Spec.OnRecord.
	onRecord func(n int, r *record.Record)

	// keep, in tests, remembers every request's id and intended time.
	keep bool
	sent []SentRequest
}

// SentRequest is a request's id and intended send time, kept for tests.
type SentRequest struct {
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
	out *gen.Outcome
}

// newCollector returns a collector of requests whose ids start with prefix, in benchmark phase
// phase ("warmup" or "profiling"), writing export lines to w (nil: none, and no summary).
func newCollector(prefix, phase string, w io.Writer, slos []stats.SLO) *collector {
	c := &collector{
		prefix: prefix, phase: phase, worker: llmtapWorker, pending: map[int]*joined{},
		effective: stats.NewHist(stats.HistOptions{}),
		lag:       stats.NewHist(stats.HistOptions{}),
		wait:      stats.NewHist(stats.HistOptions{}),
		errISL:    stats.NewHist(aiperf.ISLHistOptions),
	}
	if w != nil {
		c.w = bufio.NewWriterSize(w, 64<<10)
		c.enc = json.NewEncoder(c.w)
		c.agg = stats.New(stats.Options{SLOs: slos})
		c.in = &aiperf.Inputs{}
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

// begin registers a request about to be sent, whose body is body.
func (c *collector) begin(si *sendInfo, body []byte) {
	c.mu.Lock()
	c.entry(si.n).si = si
	if si.session != "" && si.sessionNum < 0 {
		if _, ok := c.sessions[si.session]; !ok {
			if c.sessions == nil {
				c.sessions = map[string]int{}
			}
			c.sessions[si.session] = len(c.sessions)
		}
	}
	num := c.sessionNum(si.n, si)
	c.slices.begin()
	c.mu.Unlock()
	if c.in != nil { // outside c.mu: validating and copying the body takes a while
		id := si.session
		if id == "" {
			id = si.id
		}
		c.in.Add(id, num, si.turn, body)
	}
}

// Consume takes a finalized record from the tap's pipeline.
func (c *collector) Consume(r *record.Record) {
	n, err := strconv.Atoi(strings.TrimPrefix(r.RequestID, c.prefix))
	if err != nil || !strings.HasPrefix(r.RequestID, c.prefix) {
		return
	}
	// The pipeline clears the record's request body once every sink had it, on its own
	// goroutine; the collector reads the record later on the generator's, so it keeps a copy
	// taken now, without the body (which it does not need).
	kept := *r
	kept.RequestBody = nil
	if c.onRecord != nil {
		c.onRecord(n, &kept)
	}
	var line *aiperf.Line
	c.mu.Lock()
	j := c.entry(n)
	j.rec = &kept
	if j.out != nil {
		line = c.emit(n, j)
	}
	c.mu.Unlock()
	c.write(line)
}

// done takes a finished request's stamps from the load generator.
func (c *collector) done(out gen.Outcome) {
	var line *aiperf.Line
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
	var lines []*aiperf.Line
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
func (c *collector) write(line *aiperf.Line) {
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

// sessionNum is AIPerf's session_num of request n: its conversation's index (the same for
// every turn) as the request gives it (Request.SessionNum), else its session's place in the
// order sessions were first sent, else, without a session, the request's number.
func (c *collector) sessionNum(n int, si *sendInfo) int {
	switch {
	case si != nil && si.sessionNum >= 0:
		return si.sessionNum
	case si == nil || si.session == "":
		return n
	}
	return c.sessions[si.session]
}

// emit accounts for one finished request and returns its export line, nil when lines are
// not written or the request is left out; c.mu is held.
func (c *collector) emit(n int, j *joined) *aiperf.Line {
	delete(c.pending, n)
	out := j.out
	now := time.Now()
	rec := j.rec
	if rec == nil {
		rec = &record.Record{RequestID: c.id(n), UsageOutputTokens: -1, Error: record.ErrUpstream}
		if out.Err != nil {
			rec.ErrorMsg = out.Err.Error()
		}
	}
	cancelled := j.si != nil && j.si.canceled.Load()
	timedOut := j.si != nil && j.si.timedOut.Load() && !rec.OK()
	if !rec.OK() && !cancelled && !timedOut && c.cut.Load() {
		// Still open when the grace period ended: not a result (AIPerf leaves it out).
		c.unfinished++
		return nil
	}
	// av is the request as AIPerf counts it: it decides the line's AIPerf members and the
	// summary. The record written beside them keeps llmtap's verdict, except that a response
	// without content says so (no_content).
	av := aiperf.Counted(rec)
	if av.Error == stats.ErrNoContent {
		rec = av
	}
	eff := record.Ms(out.EffectiveLatency())
	c.lag.Record(now, record.Ms(out.Lag()))
	c.wait.Record(now, record.Ms(out.QueueWait()))
	if out.Lag() > LateThreshold {
		c.late++
	}
	if av.OK() {
		c.ok++
		c.effective.Record(now, eff)
	} else {
		c.failed++
		if isl, ok := aiperf.ErrorISL(av); ok {
			c.errISL.Record(now, isl)
		}
	}
	if c.agg != nil {
		c.agg.Add(av)
		c.slices.add(av, now)
	}
	line := &aiperf.Line{
		Record: rec, N: n, ScheduleLagMs: record.Ms(out.Lag()), QueueWaitMs: record.Ms(out.QueueWait()),
		EffectiveLatencyMs: eff, ErrorClass: rec.Error,
	}
	turn := 0 // the request's turn in its session, from 1 (0: unknown)
	if si := j.si; si != nil {
		line.SessionID, line.Intended, turn = si.session, si.intended, si.turn
		if c.keep {
			c.sent = append(c.sent, SentRequest{ID: si.id, N: n, Session: si.session, Intended: si.intended,
				Done: out.Done, Start: out.Released})
		}
	}
	line.WasCancelled = cancelled
	if cancelled {
		c.cancelled++
	}
	if out.Err != nil {
		line.SendError = out.Err.Error()
	}
	line.Error = aiperf.NewErrorDetails(av, cancelled, line.SendError)
	if timedOut {
		line.Error = timeoutDetails()
	}
	c.errs.Add(line.Error)
	if c.w == nil {
		return nil
	}
	line.Metadata = aiperf.LineMeta{
		SessionNum: c.sessionNum(n, j.si), XRequestID: rec.RequestID, WorkerID: c.worker, RecordProcessorID: c.worker,
		BenchmarkPhase: c.phase, WasCancelled: cancelled,
	}
	if line.SessionID != "" {
		line.Metadata.XCorrelationID, line.Metadata.ConversationID = &line.SessionID, &line.SessionID
	}
	if turn > 0 {
		k := turn - 1
		line.Metadata.TurnIndex = &k
	}
	startNs, endNs := now.UnixNano(), now.UnixNano()
	if !rec.Start.IsZero() {
		startNs = rec.Start.UnixNano()
		endNs = rec.Start.Add(time.Duration(rec.DurationMs * float64(time.Millisecond))).UnixNano()
		if rec.Stream && rec.HeadersMs != nil {
			ack := rec.Start.Add(time.Duration(*rec.HeadersMs * float64(time.Millisecond))).UnixNano()
			line.Metadata.RequestAckNs = &ack
		}
	}
	line.Metadata.RequestStartNs, line.Metadata.RequestEndNs = startNs, endNs
	if cancelled {
		line.Metadata.CancellationTimeNs = &line.Metadata.RequestEndNs
	}
	line.Metrics.Fill(av, eff, startNs, endNs)
	return line
}
