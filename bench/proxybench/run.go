package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// upstreams are the mock servers every scenario draws on: no delays (saturation), the realistic
// 20 ms TTFT / 5 ms ITL, and one that holds its streams (TTFT of minutes) for the memory
// scenario. No role chunk, so the first body byte is the first token; prompts counted by the
// free approximation, so the mock spends nothing on a tokenizer; served by the mock's lean
// HTTP/1.1 server unless netHTTP, so that the upstream takes as little of the shared cores as
// it can.
func upstreams(portBase, tokens int, netHTTP bool) []upstream {
	common := []string{"--output-tokens", fmt.Sprint(tokens), "--role-chunk=false", "--prompt-counter", "approx", "--seed", "1",
		fmt.Sprintf("--lean-http=%v", !netHTTP)}
	mk := func(name string, port int, extra ...string) upstream {
		return upstream{name: name, addr: fmt.Sprintf("127.0.0.1:%d", port), args: append(slices.Clone(common), extra...)}
	}
	return []upstream{
		mk("fast", portBase, "--ttft", "0s", "--itl", "0s"),
		mk("real", portBase+1, "--ttft", "20ms", "--itl", "5ms"),
		mk("idle", portBase+2, "--ttft", "10m", "--itl", "5ms"),
	}
}

func scenarios(o options) map[string]scenario {
	return map[string]scenario{
		"stream-sat": {name: "stream-sat", upstream: "fast", stream: true, conc: o.satConc,
			what: fmt.Sprintf("streams of %d tokens, no delays, %d concurrent (saturation)", o.tokens, o.satConc)},
		"stream-64": {name: "stream-64", upstream: "real", stream: true, conc: 64,
			what: fmt.Sprintf("streams of %d tokens, TTFT 20 ms, ITL 5 ms, 64 concurrent", o.tokens)},
		"stream-256": {name: "stream-256", upstream: "real", stream: true, conc: 256,
			what: fmt.Sprintf("streams of %d tokens, TTFT 20 ms, ITL 5 ms, 256 concurrent", o.tokens)},
		"unary-sat": {name: "unary-sat", upstream: "fast", stream: false, conc: o.satConc,
			what: fmt.Sprintf("non-streaming, %d tokens, no delays, %d concurrent (saturation)", o.tokens, o.satConc)},
	}
}

// measurement is one run of one scenario against one variant.
type measurement struct {
	loadResult
	cpu      float64 // proxy CPU seconds during the run; NaN for direct
	syscalls int64   // proxy read and write system calls during the run
}

// bench holds the processes of a whole run.
type bench struct {
	o       options
	dir     string
	ups     []upstream
	mocks   []*proc
	proxies map[string]*proxy
	clients map[string]*http.Client // by variant and scenario
}

func (b *bench) close() {
	for _, p := range b.proxies {
		p.stop()
	}
	for _, m := range b.mocks {
		m.stop()
	}
	_ = os.RemoveAll(b.dir)
}

func run(ctx context.Context, o options) (*report, error) {
	dir, err := os.MkdirTemp("", "proxybench-")
	if err != nil {
		return nil, err
	}
	b := &bench{o: o, dir: dir, ups: upstreams(o.portBase, o.tokens, o.mockNetHTTP), proxies: map[string]*proxy{}, clients: map[string]*http.Client{}}
	defer b.close()
	for _, u := range b.ups {
		m, err := startMock(o.bin, u)
		if err != nil {
			return nil, err
		}
		b.mocks = append(b.mocks, m)
	}
	for i, v := range o.variants {
		if v.name == "direct" {
			continue
		}
		base := o.portBase + 10*(i+1)
		p, err := startProxy(v.binary(o.bin), dir, v, base+9, base, b.ups)
		if err != nil {
			return nil, err
		}
		b.proxies[v.name] = p
	}

	rep := &report{o: o, started: time.Now(), loadBefore: loadAvg()}
	all := scenarios(o)
	var loadScenarios []scenario
	for _, name := range o.scenarios {
		if s, ok := all[name]; ok {
			loadScenarios = append(loadScenarios, s)
		} else if name != "idle" {
			return nil, fmt.Errorf("unknown scenario %q", name)
		}
	}
	if err := b.loadRuns(ctx, loadScenarios, rep); err != nil {
		return nil, err
	}
	if slices.Contains(o.scenarios, "idle") {
		if err := b.idleRuns(ctx, rep); err != nil {
			return nil, err
		}
	}
	if o.profileDir != "" {
		if err := b.profiles(ctx); err != nil {
			return nil, err
		}
	}
	rep.loadAfter = loadAvg()
	rep.elapsed = time.Since(rep.started)
	return rep, ctx.Err()
}

// target is the URL a variant's client sends a scenario's requests to.
func (b *bench) target(v variant, s scenario) string {
	addr := ""
	if v.name == "direct" {
		for _, u := range b.ups {
			if u.name == s.upstream {
				addr = u.addr
			}
		}
	} else {
		addr = b.proxies[v.name].addrs[s.upstream]
	}
	return "http://" + addr + "/v1/chat/completions"
}

func (b *bench) client(v variant, s scenario) *http.Client {
	key := v.name + "/" + s.name
	if c, ok := b.clients[key]; ok {
		return c
	}
	c := newClient(s.conc)
	b.clients[key] = c
	return c
}

// once runs one scenario against one variant and reads the proxy's CPU time around it.
func (b *bench) once(ctx context.Context, v variant, s scenario, d time.Duration) (measurement, error) {
	l := &load{client: b.client(v, s), url: b.target(v, s), body: requestBody(s.stream, b.o.tokens), stream: s.stream, conc: s.conc}
	p := b.proxies[v.name]
	var cpu0 float64
	var sys0 int64
	if p != nil {
		var err error
		if cpu0, err = cpuSeconds(p.pid()); err != nil {
			return measurement{}, err
		}
		if sys0, err = syscalls(p.pid()); err != nil {
			return measurement{}, err
		}
	}
	res := l.run(ctx, d)
	m := measurement{loadResult: res, cpu: nan}
	if p != nil {
		cpu1, err := cpuSeconds(p.pid())
		if err != nil {
			return measurement{}, err
		}
		sys1, err := syscalls(p.pid())
		if err != nil {
			return measurement{}, err
		}
		m.cpu, m.syscalls = cpu1-cpu0, sys1-sys0
	}
	if res.requests == 0 {
		return m, fmt.Errorf("%s %s: no request completed: %v", v.name, s.name, res.firstErr)
	}
	return m, nil
}

// loadRuns warms every pair up, then runs the repetitions, each scenario's variants in
// alternating order (A B C, C B A, …) so that neither always runs first after a scenario change,
// or all at once with -together.
func (b *bench) loadRuns(ctx context.Context, ss []scenario, rep *report) error {
	for _, s := range ss {
		for _, v := range b.o.variants {
			if _, err := b.once(ctx, v, s, b.o.warmup); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	if b.o.together {
		return b.togetherRuns(ctx, ss, rep)
	}
	for r := range b.o.reps {
		for _, s := range ss {
			order := slices.Clone(b.o.variants)
			if r%2 == 1 {
				slices.Reverse(order)
			}
			for _, v := range order {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				m, err := b.once(ctx, v, s, b.o.duration)
				if err != nil {
					return err
				}
				b.add(rep, s, v, r, m, "")
			}
		}
	}
	return nil
}

// add reports repetition r of scenario s against variant v, and shows it.
func (b *bench) add(rep *report, s scenario, v variant, r int, m measurement, note string) {
	rep.add(s, v.name, r, m)
	progress("rep %d/%d %-10s %-14s %8.0f req/s %10.0f ev/s  cpu %.2fs  ttft p50 %.2f ms  errors %d%s",
		r+1, b.o.reps, s.name, v.name, m.reqPerS(), m.eventsPerS(), m.cpu, ms(pct(m.ttfts, 50)), m.errors, note)
}

// togetherRuns runs the repetitions with every variant of a scenario loaded at the same time,
// so that each repetition's ratios compare the variants over the same seconds of the machine.
// The warm-up, one variant after the other, made every client, so the goroutines only read
// b.clients.
func (b *bench) togetherRuns(ctx context.Context, ss []scenario, rep *report) error {
	for r := range b.o.reps {
		for _, s := range ss {
			got := make([]measurement, len(b.o.variants))
			errs := make([]error, len(b.o.variants))
			var wg sync.WaitGroup
			for i, v := range b.o.variants {
				wg.Go(func() { got[i], errs[i] = b.once(ctx, v, s, b.o.duration) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			for i, v := range b.o.variants {
				b.add(rep, s, v, r, got[i], " (together)")
			}
		}
	}
	return nil
}

// idleRuns measures memory per open stream: for each repetition and proxied variant, a fresh
// proxy process is warmed up, collected, and its RSS and runtime memory read before and after
// the bench opens the idle streams through it.
func (b *bench) idleRuns(ctx context.Context, rep *report) error {
	var ups []upstream
	for _, u := range b.ups {
		if u.name == "fast" || u.name == "idle" {
			ups = append(ups, u)
		}
	}
	warm := scenario{name: "idle-warmup", upstream: "fast", stream: true, conc: 16}
	for r := range b.o.idleReps {
		order := slices.Clone(b.o.variants)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for i, v := range order {
			if v.name == "direct" {
				continue
			}
			base := b.o.portBase + 90 + 3*i
			p, err := startProxy(v.binary(b.o.bin), filepath.Join(b.dir, "idle"), v, base+2, base, ups)
			if err != nil {
				return err
			}
			m, err := b.idleOnce(ctx, p, warm)
			p.stop()
			if err != nil {
				return fmt.Errorf("idle streams through %s: %w", v.name, err)
			}
			rep.addIdle(v.name, m)
			progress("idle rep %d/%d %-14s RSS %+.1f KiB/stream, heap+stack %+.1f KiB/stream",
				r+1, b.o.idleReps, v.name, m.rssPerStream()/1024, m.goPerStream()/1024)
		}
	}
	return nil
}

// idleMeasurement is the memory of one proxy before and with the idle streams open.
type idleMeasurement struct {
	streams          int
	rss0, rss1       int64
	before, withOpen memStats
}

func (m idleMeasurement) rssPerStream() float64 { return float64(m.rss1-m.rss0) / float64(m.streams) }
func (m idleMeasurement) goPerStream() float64 {
	d := (m.withOpen.HeapInuse + m.withOpen.StackInuse) - (m.before.HeapInuse + m.before.StackInuse)
	return float64(d) / float64(m.streams)
}

func (b *bench) idleOnce(ctx context.Context, p *proxy, warm scenario) (idleMeasurement, error) {
	m := idleMeasurement{streams: b.o.idleStreams}
	// Warm up with real streams, so that pools, code pages and the measurement engine exist
	// before the baseline is taken.
	wl := &load{client: newClient(warm.conc), url: "http://" + p.addrs["fast"] + "/v1/chat/completions",
		body: requestBody(true, b.o.tokens), stream: true, conc: warm.conc}
	if res := wl.run(ctx, 500*time.Millisecond); res.requests == 0 {
		return m, fmt.Errorf("warm-up failed: %v", res.firstErr)
	}
	var err error
	if m.before, err = collectGarbage(ctx, p.admin); err != nil {
		return m, err
	}
	if m.rss0, err = rssBytes(p.pid()); err != nil {
		return m, err
	}
	sctx, cancel := context.WithCancel(ctx)
	wait, err := idleStreams(sctx, newClient(m.streams), "http://"+p.addrs["idle"]+"/v1/chat/completions", m.streams, 30*time.Second)
	defer func() { cancel(); wait() }()
	if err != nil {
		return m, err
	}
	time.Sleep(500 * time.Millisecond)
	if m.withOpen, err = collectGarbage(ctx, p.admin); err != nil {
		return m, err
	}
	m.rss1, err = rssBytes(p.pid())
	return m, err
}

// loadAvg is the first line of /proc/loadavg, for the report.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := string(b)
	if len(f) > 14 {
		f = f[:14]
	}
	return f
}
