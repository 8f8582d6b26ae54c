package headroom

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// This file is a seeded discrete-event simulator of a server with c slots and a first-come
// first-served queue in front of them (the M/G/c queue), fed either open arrivals (a Poisson
// process whose rate may ramp) or a closed loop of clients (each sends a request, waits for
// its end, thinks, sends the next; the number of clients may ramp). A request's service time S
// is drawn from the scenario's distribution; its time to first token is its wait in the queue
// plus a prefill of S/10, its latency the wait plus S. The simulated requests are fed to an
// Estimator exactly as the handler would: each is counted in flight from its arrival to its
// end (the load integrator of registry.go), observed at its end, and the estimator ticks twice
// a window on the simulated clock. The truth of a scenario is computed by long steady-state
// runs of the same simulator: the arrival rate (open) or throughput (closed) at which the mean
// TTFT reaches the objective.

// service draws service times with mean 1 s.
type service int

const (
	expService       service = iota // exponential: M/M/c
	detService                      // deterministic: M/D/c
	lognormalService                // lognormal with σ = 1.2 (CV 1.8), a heavy tail: M/G/c
)

func (s service) String() string { return [...]string{"M", "D", "G"}[s] }

func (s service) draw(r *rand.Rand) float64 {
	switch s {
	case detService:
		return 1
	case lognormalService:
		const sigma = 1.2
		return math.Exp(sigma*r.NormFloat64() - sigma*sigma/2)
	}
	return r.ExpFloat64()
}

// traffic is how requests arrive over a run of Duration seconds.
type traffic struct {
	// Open: a Poisson process whose rate goes linearly from Rate0 to Rate1 requests/s.
	Open         bool
	Rate0, Rate1 float64
	// Closed: a loop of clients, from Clients0 to Clients1 (linearly in time), each thinking
	// an exponential time of mean Think seconds between the end of a request and the next.
	Clients0, Clients1 int
	Think              float64
	Duration           float64
}

// simRequest is one simulated request, in seconds.
type simRequest struct {
	arrival, ttft, latency float64
}

type simEvent struct {
	t      float64
	kind   int // 0 arrival, 1 end
	client int // closed loop: the client; -1 open
	req    int // end: the request
}

// eventHeap is a binary min-heap of events by time (ends before arrivals at the same
// instant), typed so that a push does not box the event (container/heap would, and the
// calibration pushes millions).
type eventHeap []simEvent

func (h eventHeap) less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].kind > h[j].kind
}

func (h *eventHeap) push(e simEvent) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *eventHeap) pop() simEvent {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r := l + 1; r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}

// simulate runs the traffic against c slots and returns the requests that ended within the
// run, in order of their end.
func simulate(tr traffic, c int, svc service, seed uint64) []simRequest {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	var ev eventHeap
	var reqs []simRequest
	var svcs []float64 // per request: its service time
	var queue []int    // waiting requests
	busy := 0
	var ended []int
	var clientOf []int // request → client
	arrive := func(t float64, client int) {
		i := len(reqs)
		s := svc.draw(r)
		reqs = append(reqs, simRequest{arrival: t})
		svcs = append(svcs, s)
		if busy < c {
			busy++
			reqs[i].ttft = s / 10
			reqs[i].latency = s
			ev.push(simEvent{t: t + s, kind: 1, client: client, req: i})
		} else {
			queue = append(queue, i)
		}
		clientOf = append(clientOf, client)
	}
	if tr.Open {
		// Non-homogeneous Poisson by thinning.
		hi := max(tr.Rate0, tr.Rate1)
		for t := r.ExpFloat64() / hi; t < tr.Duration; t += r.ExpFloat64() / hi {
			if r.Float64()*hi <= tr.Rate0+(tr.Rate1-tr.Rate0)*t/tr.Duration {
				ev.push(simEvent{t: t, kind: 0, client: -1})
			}
		}
	} else {
		// Client k joins when the ramp reaches k+1 clients.
		for k := range tr.Clients1 {
			join := 0.0
			if k >= tr.Clients0 {
				join = tr.Duration * float64(k+1-tr.Clients0) / float64(tr.Clients1-tr.Clients0+1)
			}
			ev.push(simEvent{t: join + tr.Think*r.ExpFloat64(), kind: 0, client: k})
		}
	}
	for len(ev) > 0 {
		e := ev.pop()
		if e.t >= tr.Duration {
			break
		}
		if e.kind == 0 {
			arrive(e.t, e.client)
			continue
		}
		ended = append(ended, e.req)
		if len(queue) > 0 {
			i := queue[0]
			queue = queue[1:]
			s := svcs[i]
			wait := e.t - reqs[i].arrival
			reqs[i].ttft = wait + s/10
			reqs[i].latency = wait + s
			ev.push(simEvent{t: e.t + s, kind: 1, client: clientOf[i], req: i})
		} else {
			busy--
		}
		if e.client >= 0 {
			ev.push(simEvent{t: e.t + tr.Think*r.ExpFloat64(), kind: 0, client: e.client})
		}
	}
	out := make([]simRequest, len(ended))
	for j, i := range ended {
		out[j] = reqs[i]
	}
	return out
}

// feedSim feeds the requests to e as the handler would, on a simulated clock starting at
// start, rotating the windows twice a window as Tick does (without Tick's fit: only the last
// estimate is read, and the fits were most of the calibration's time), and ticks at the end
// of the run.
func feedSim(e *Estimator, clk *clock, start time.Time, reqs []simRequest, duration float64, objective time.Duration) {
	type edge struct {
		t   float64
		end bool
		i   int
	}
	edges := make([]edge, 0, 2*len(reqs))
	for i, q := range reqs {
		edges = append(edges, edge{q.arrival, false, i}, edge{q.arrival + q.latency, true, i})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		case a.end && !b.end:
			return -1
		case !a.end && b.end:
			return 1
		}
		return 0
	})
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	ld := load{base: start}
	entered := make([]float64, len(reqs))
	half := e.opts.Window.Seconds() / 2
	next := half
	for _, g := range edges {
		for g.t >= next {
			clk.t = at(next)
			rotate(e)
			next += half
		}
		clk.t = at(g.t)
		if !g.end {
			entered[g.i] = ld.add(clk.t, 1)
			continue
		}
		area := ld.add(clk.t, -1)
		q := reqs[g.i]
		sec := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
		e.Observe("sim:1", objective, max(1, (area-entered[g.i])/q.latency), sec(q.ttft), sec(q.latency))
	}
	clk.t = at(duration)
	e.Tick()
}

// rotate opens the windows that have begun, as Tick does before it fits.
func rotate(e *Estimator) {
	now := e.opts.Now()
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, s := range e.series {
		s.mu.Lock()
		s.rotateLocked(now, e.opts)
		s.mu.Unlock()
	}
}
