package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/format/aiperf"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/load/workload"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// sender sends the requests of one phase through the measuring transport (tap.Transport).
type sender struct {
	baseURL     string
	headers     http.Header
	client      *http.Client
	col         *collector
	class       string
	cancelRate  float64 // fraction of requests to cancel, in [0, 1]
	cancelDelay time.Duration
	timeout     time.Duration // --request-timeout-seconds; 0: none
	seed        uint64
	build       func(n int) (Request, error)
	reply       bool // requests carry their number to the reply transport
}

// newSender returns a sender whose requests are measured by tp (records of class class) and
// collected by col, over the shared transport base.
func newSender(base http.RoundTripper, tp *tap.Tap, class string, col *collector) *sender {
	tp.AddSink(col)
	return &sender{client: &http.Client{Transport: &tap.Transport{Base: base, Measure: tp}}, col: col, class: class}
}

// cancels reports whether request n is one of the cancelled fraction, decided by the seed so
// that the same requests are cancelled on every run.
func (s *sender) cancels(n int) bool {
	if s.cancelRate <= 0 {
		return false
	}
	return rand.New(rand.NewPCG(s.seed^0xca9ce1, uint64(n))).Float64() < s.cancelRate
}

// request builds the HTTP request of number n, intended for time intended.
func (s *sender) request(ctx context.Context, n int, intended time.Time) (*http.Request, error) {
	b, err := s.build(n)
	if err != nil {
		return nil, err
	}
	if s.reply {
		ctx = withReply(ctx, n)
	}
	si := &sendInfo{n: n, id: s.col.id(n), session: b.Session, sessionNum: -1, turn: b.Turn, intended: intended}
	if b.SessionNum != nil {
		si.sessionNum = *b.SessionNum
	}
	s.col.begin(si, b.Body)
	x := &si.x
	*x = tap.Exchange{ID: si.id, Class: s.class, Body: b.Body, Canceled: &si.canceled}
	if s.cancels(n) {
		ctx, x.Closed = si.cancelAfterWrite(ctx, s.cancelDelay)
	}
	if s.timeout > 0 {
		ctx, x.Closed = si.timeoutAfter(ctx, s.timeout, x.Closed)
	}
	req, err := http.NewRequestWithContext(tap.WithExchange(ctx, x), http.MethodPost, s.baseURL+b.Path, bytes.NewReader(b.Body))
	if err != nil {
		if x.Closed != nil {
			x.Closed()
		}
		return nil, err
	}
	for k, v := range s.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", si.id)
	if b.Session != "" {
		req.Header.Set("X-Correlation-Id", b.Session)
	}
	return req, nil
}

// loadgenRequest adapts request to loadgen's builder.
func (s *sender) loadgenRequest(ctx context.Context, n int) (*http.Request, error) {
	intended, _ := gen.IntendedTime(ctx)
	return s.request(ctx, n, intended)
}

// sendAt sends request n outside loadgen's scheduler (a session's next turn): it waits for
// intended with pacer, sends, reads the whole response and reports the stamps, as offsets
// from start, the way loadgen does.
func (s *sender) sendAt(ctx context.Context, pacer *gen.Pacer, start time.Time, n int, intended time.Time) gen.Outcome {
	out := gen.Outcome{Stamp: gen.Stamp{N: n, Intended: intended.Sub(start)}}
	if err := pacer.Wait(ctx, intended); err != nil {
		out.Err = err
		out.Released, out.Sent, out.Done = time.Since(start), time.Since(start), time.Since(start)
		return out
	}
	out.Released = time.Since(start)
	out.Sent = out.Released
	req, err := s.request(ctx, n, intended)
	var resp *http.Response
	if err == nil {
		resp, err = s.client.Do(req)
	}
	if err != nil {
		out.Err = err
		out.Done = time.Since(start)
		return out
	}
	out.Status = resp.StatusCode
	_, out.Err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	out.Done = time.Since(start)
	return out
}

// cpuWarnAt is the CPU utilization (cores) above which the generator may be the bottleneck.
const cpuWarnAt = 0.75

func (c *collector) report(counters gen.Counters, cpu float64, tp *tap.Tap) aiperf.Generator {
	now := time.Now()
	_, eff := c.effective.Snapshot(now)
	_, lag := c.lag.Snapshot(now)
	_, wait := c.wait.Snapshot(now)
	c.mu.Lock()
	defer c.mu.Unlock()
	g := aiperf.Generator{
		Scheduled: counters.Scheduled, Sent: counters.Sent, Dropped: counters.Dropped,
		Late: c.late, LateAfterMs: float64(LateThreshold) / 1e6, Cancelled: c.cancelled,
		CPUUtilization: cpu, ScheduleLag: lag, QueueWait: wait, EffectiveLatency: eff,
		RecordsDropped: tp.Dropped(),
	}
	g.CPUWarning = cpuWarning(cpu)
	return g
}

// cpuWarning warns of a generator that used more than cpuWarnAt of a core; "" otherwise.
func cpuWarning(cpu float64) string {
	if cpu <= cpuWarnAt {
		return ""
	}
	return fmt.Sprintf("the generator used %.0f%% of a core (over %.0f%%): it may have been the bottleneck; check the schedule lag", 100*cpu, 100*cpuWarnAt)
}

// sendInfo is what the collector knows of one request before its record arrives.
type sendInfo struct {
	n       int
	id      string
	session string
	// sessionNum is Request.SessionNum, -1 when not given.
	sessionNum int
	turn       int         // Request.Turn
	intended   time.Time   // the schedule's time for the request (monotonic)
	canceled   atomic.Bool // the cancellation fired
	timedOut   atomic.Bool // the request timeout fired
	x          tap.Exchange
}

// cancelAfterWrite returns ctx cancelled delay after the request is fully written (AIPerf's
// --request-cancellation-delay), and the function that stops the timer once the exchange is
// over.
func (si *sendInfo) cancelAfterWrite(ctx context.Context, delay time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	var timer *time.Timer
	var mu sync.Mutex
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) {
			mu.Lock()
			defer mu.Unlock()
			if timer == nil {
				timer = time.AfterFunc(delay, func() { si.canceled.Store(true); cancel() })
			}
		},
	})
	return ctx, func() {
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

// Headers returns the headers of a benchmark's requests: each "Name: value" of lines
// (--header), then apiKey (--api-key) as the endpoint type's API takes it, x-api-key with the
// Anthropic version for messages and a bearer Authorization otherwise. A malformed line is
// left out, with an error.
func Headers(lines []string, apiKey, endpointType string) (http.Header, []error) {
	h := http.Header{}
	var errs []error
	for _, line := range lines {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			errs = append(errs, fmt.Errorf("--header %q: want 'Name: value'", line))
			continue
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	switch {
	case apiKey == "":
	case endpointType == workload.EndpointMessages:
		h.Set("X-Api-Key", apiKey)
		h.Set("Anthropic-Version", "2023-06-01")
	default:
		h.Set("Authorization", "Bearer "+apiKey)
	}
	return h, errs
}
