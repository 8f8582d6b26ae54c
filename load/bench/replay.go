package bench

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/load/workload"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// Replay is a trace sent again at its own pace, or faster: the requests without a session and
// each session's first turn on the trace's schedule (open loop), each later turn its recorded
// delay after the previous turn's response. A request with a recorded body (a payload file)
// is sent verbatim; any other gets a synthetic prompt of its input length, with its prefix
// blocks (hash_ids) shared as the trace shares them.
type Replay struct {
	// Requests are the trace's requests in time order (trace.ReadSorted).
	Requests []trace.Request
	// Path is the URL path of a request whose trace names none.
	Path string
	// Body writes the synthetic prompts' request bodies.
	Body workload.BodySpec
	// Tokens sizes the synthetic prompts; nil: o200k_base.
	Tokens tokens.Counter
	// FitTokens sizes synthetic prompts so that the server counts the trace's input lengths:
	// a fit of server tokens per prompt token is learned from the first responses' usage
	// (workload.TokenFit). For when Tokens is not the server's tokenizer.
	FitTokens bool
	// Speedup divides the trace's times and delays (2: twice as fast); it must be positive.
	Speedup float64
	// Lead is the time before the first request, at Speedup 1: the first request's place
	// after the start of a trace cut from a longer one.
	Lead time.Duration
	// Worker is this process's share of the trace: whole sessions (Take).
	Worker Worker
}

// prebuildTokens bounds the prompt tokens of a trace whose bodies are all built before the
// run: about 5 bytes a token, so 50 M tokens is 250 MB.
const prebuildTokens = 50_000_000

// Apply makes spec send the replay: its Build, MapN, Next, OnRecord (when fitting), Schedule
// (the arrivals) and Total, with GraceFrom the time the last scheduled request is due. It
// returns the token fit (nil when prompts are not fitted), whose String says what it learned.
func (rp Replay) Apply(spec *Spec) (*workload.TokenFit, error) {
	reqs := rp.Requests
	if len(reqs) == 0 {
		return nil, fmt.Errorf("no requests")
	}
	plan := planReplay(reqs)
	corpus, err := workload.CorpusFor(rp.Tokens)
	if err != nil {
		return nil, err
	}
	total, synthetic := 0, false // prompt tokens; whether any request gets a synthetic prompt
	for i := range reqs {
		total += reqs[i].InputLength
		synthetic = synthetic || reqs[i].Payload == nil
	}
	var fit *workload.TokenFit
	var sent []atomic.Int32
	if rp.FitTokens && synthetic {
		fit, sent = new(workload.TokenFit), make([]atomic.Int32, len(reqs))
	}
	build := func(i int) (Request, error) {
		q := &reqs[i]
		b := Request{Path: rp.Path, Session: q.SessionID, SessionNum: &plan.conv[i]}
		if q.Payload != nil {
			b.Body = q.Payload
			if q.Path != "" {
				b.Path = q.Path
			}
			return b, nil
		}
		n := q.InputLength
		if fit != nil {
			n = fit.Size(n)
			sent[i].Store(int32(min(n, math.MaxInt32)))
		}
		body, err := rp.Body.TraceBody(corpus, n, q.OutputLength, q.HashIDs, i)
		b.Body = body
		return b, err
	}
	// Bodies are built before the run when they fit in memory comfortably, so that the send
	// path does no prompt building or JSON encoding and the schedule is kept to the millisecond;
	// not when their sizes are fitted to the server's counts as the responses come.
	if fit == nil && total <= prebuildTokens {
		bodies := make([]Request, len(reqs))
		for i := range reqs {
			if bodies[i], err = build(i); err != nil {
				return nil, err
			}
		}
		build = func(i int) (Request, error) { return bodies[i], nil }
	}
	w := rp.Worker
	heads := Take(w, plan.heads)
	if len(heads) == 0 {
		return nil, fmt.Errorf("worker %d of %d has no request: the trace schedules %d", w.Index, w.Count, len(plan.heads))
	}
	times := make([]time.Duration, len(heads))
	for i, h := range heads {
		times[i] = reqs[h].Timestamp
	}
	arrivals, err := gen.NewTrace(times, rp.Speedup)
	if err != nil {
		return nil, err
	}
	last := time.Duration(0)
	if n := len(plan.headTimes); n > 0 {
		last = time.Duration(float64(plan.headTimes[n-1]-plan.headTimes[0]+rp.Lead) / rp.Speedup)
	}
	// A worker's first request keeps its place in the whole trace's schedule, which starts
	// at Lead.
	shift := time.Duration(float64(times[0]-plan.headTimes[0]+rp.Lead) / rp.Speedup)
	spec.Schedule = gen.Config{Arrivals: Shifted(arrivals, shift), MaxInFlight: -1}
	spec.Total, spec.Build = plan.requests(heads), build
	spec.MapN = func(n int) int { return heads[n] }
	if fit != nil {
		spec.OnRecord = func(n int, rec *record.Record) {
			if n >= 0 && n < len(sent) && rec.InputTokensSource == "usage" {
				fit.Observe(int(sent[n].Load()), rec.InputTokens)
			}
		}
	}
	if plan.hasSessions {
		spec.Next = func(i int) (int, time.Duration, bool) {
			nx := plan.next[i]
			if nx < 0 {
				return 0, 0, false
			}
			return nx, time.Duration(float64(reqs[nx].Delay) / rp.Speedup), true
		}
	}
	// The grace period starts when the trace's last request is due.
	spec.GraceFrom = last
	return fit, nil
}

// replayPlan splits a trace into the requests sent on the open-loop schedule (heads: requests
// without a session, and each session's first turn) and the chain of each session's turns.
type replayPlan struct {
	heads     []int           // trace indices of scheduled requests, in time order
	headTimes []time.Duration // their timestamps
	next      []int           // trace index of the turn after i in its session, −1 if none
	// conv is AIPerf's session_num of each request: its conversation's place among the heads,
	// in the order the trace first names it (a request without a session is one of its own).
	conv        []int
	hasSessions bool
}

// requests counts the requests the scheduled heads send, each with its session's later turns.
func (p replayPlan) requests(heads []int) int {
	n := 0
	for _, h := range heads {
		for i := h; i >= 0; i = p.next[i] {
			n++
		}
	}
	return n
}

func planReplay(reqs []trace.Request) replayPlan {
	p := replayPlan{next: make([]int, len(reqs)), conv: make([]int, len(reqs))}
	last := map[string]int{}
	for i := range reqs {
		p.next[i] = -1
		sid := reqs[i].SessionID
		if prev, ok := last[sid]; ok { // a request without a session (sid "") is never in last
			p.next[prev] = i
			p.conv[i] = p.conv[prev]
			p.hasSessions = true
		} else {
			p.conv[i] = len(p.heads)
			p.heads = append(p.heads, i)
		}
		if sid != "" {
			last[sid] = i
		}
	}
	for _, i := range p.heads {
		p.headTimes = append(p.headTimes, reqs[i].Timestamp)
	}
	return p
}
