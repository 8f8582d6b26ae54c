// Command proxybench measures what llmtap costs a Caddy reverse proxy, on loopback, against the
// llmtap mock inference server: the same binary (bin/llmtap) runs as plain Caddy and as Caddy
// with llmtap measuring, each a separate process, and the bench drives both — and the mock
// directly — with closed-loop load, interleaved (A B C, C B A, …) so that drifting background
// load on a shared machine hits every variant alike. Every figure is reported as the median over
// the repetitions and as the median of per-repetition ratios to plain Caddy.
//
// Proxy CPU time comes from /proc/<pid>/stat (utime+stime) around each run, memory from
// /proc/<pid>/status and the proxy's own runtime figures (expvar on Caddy's admin listener),
// client-observed TTFT from the bench's own clock (request sent → first body byte).
//
// Run it through bench/proxy.sh (or `make bench-proxy`), which builds the binary first.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// variant is one way of reaching the mock: directly, or through a proxy whose site block holds
// snippet before reverse_proxy and whose global options hold global ({site:NAME} there is the
// address of the proxy's site in front of upstream NAME).
type variant struct {
	name    string
	snippet string
	global  string
	// bin, when set, is the binary this variant's proxy runs (a variant named "X@base" in
	// -variants is X run by -base-bin), so a change can be measured against the binary it
	// started from in one interleaved run.
	bin string
}

// builtinVariants are the configurations the bench knows by name: plain Caddy, llmtap
// measuring, and llmtap also recording (records only; records and trace, the default; and
// request payloads as well), and llmtap measuring with shadow load at a fixed rate beside the
// measured traffic. -variant adds any other.
var builtinVariants = []variant{
	{name: "direct"},
	{name: "caddy"},
	{name: "llmtap", snippet: "llmtap"},
	// Diagnostic: events framed and timed but their JSON not decoded (the "unknown" API), to
	// split llmtap's cost between the decoder and everything else.
	{name: "llmtap-timing-only", snippet: "llmtap {\n\t\tapi unknown\n\t}"},
	{name: "llmtap-records", snippet: "llmtap {\n\t\trecord {dir}/rec {\n\t\t\tfiles records\n\t\t}\n\t}"},
	{name: "llmtap-trace", snippet: "llmtap {\n\t\trecord {dir}/rec\n\t}"},
	{name: "llmtap-payloads", snippet: "llmtap {\n\t\trecord {dir}/rec {\n\t\t\tpayloads\n\t\t}\n\t}"},
	// Shadow load from inside the proxy, beside whatever the scenario sends: 20 streams/s of
	// 128 tokens, constant arrivals, through the site in front of the 20 ms / 5 ms upstream
	// (2,560 events/s more through the proxy, measured as class shadow).
	{name: "llmtap-shadow", snippet: "llmtap", global: shadowGlobal},
	// The per-request options of issues 20 and 22 all on: a tenant from a header, the
	// Server-Timing trailer, two SLOs, passive headroom, and list prices for every model.
	{name: "llmtap-options", snippet: optionsSnippet, global: optionsGlobal},
}

const optionsSnippet = `llmtap {
		tenant header User-Agent
		server_timing
		slo chat {
			ttft 500ms
			itl 50ms
		}
		slo {
			latency 30s
		}
		passive_headroom {
			ttft 500ms
		}
	}`

const optionsGlobal = `llmtap {
		list_price * {
			input 1
			output 2
			cached_input 0.5
		}
	}`

const shadowGlobal = `llmtap {
		shadow beside {
			url http://{site:real}/v1/chat/completions
			model mock-model
			rate 20
			arrival constant
			isl 32
			osl 128
			streaming on
			max_in_flight 256
		}
	}`

// scenario is one kind of load.
type scenario struct {
	name     string
	upstream string
	stream   bool
	conc     int
	what     string
}

type options struct {
	mockNetHTTP  bool
	bin          string
	baseBin      string
	reps         int
	duration     time.Duration
	warmup       time.Duration
	variants     []variant
	scenarios    []string
	satConc      int
	tokens       int
	idleStreams  int
	idleReps     int
	profileDir   string
	profileTime  time.Duration
	out          string
	portBase     int
	extraVariant multiFlag
	together     bool
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ", ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	var o options
	var variants, scenarios string
	flag.StringVar(&o.bin, "bin", "bin/llmtap", "the llmtap binary: runs the mock and every proxy variant")
	flag.StringVar(&o.baseBin, "base-bin", "", "a second binary (e.g. built from the base commit of a change): -variants may then name X@base, variant X run by this binary")
	flag.IntVar(&o.reps, "reps", 5, "repetitions of each scenario per variant")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "length of one run (requests in flight at the end complete and count)")
	flag.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "warm-up run per scenario and variant before the measured repetitions")
	flag.StringVar(&variants, "variants", "direct,caddy,llmtap", "variants to compare, in order: direct, caddy, llmtap, llmtap-timing-only, llmtap-records, llmtap-trace, llmtap-payloads, llmtap-shadow, llmtap-options, or a -variant name")
	flag.Var(&o.extraVariant, "variant", "extra variant as name=snippet: the Caddyfile lines put before reverse_proxy ({dir} is the variant's folder); repeatable")
	flag.StringVar(&scenarios, "scenarios", "stream-sat,stream-64,stream-256,unary-sat,idle", "scenarios to run")
	flag.IntVar(&o.satConc, "sat-conc", 64, "concurrent requests of the saturation scenarios")
	flag.IntVar(&o.tokens, "tokens", 128, "output tokens per response")
	flag.IntVar(&o.idleStreams, "idle-streams", 2000, "open idle streams in the memory scenario")
	flag.IntVar(&o.idleReps, "idle-reps", 3, "repetitions of the memory scenario (a fresh proxy process each)")
	flag.StringVar(&o.profileDir, "profile", "", "after the runs, take CPU and allocation profiles of each proxy under stream-sat load into this folder")
	flag.DurationVar(&o.profileTime, "profile-time", 8*time.Second, "length of the CPU profile")
	flag.StringVar(&o.out, "out", "", "also write the markdown report to this file")
	flag.BoolVar(&o.mockNetHTTP, "mock-net-http", false, "serve the mock upstreams with net/http's server instead of the mock's lean HTTP/1.1 server (--lean-http)")
	flag.BoolVar(&o.together, "together", false, "run the variants of each load scenario at the same time, each with its own clients at the scenario's concurrency, instead of one after another: every variant then sees the same moments of the machine, which is what a latency comparison on shared, noisy cores needs (the machine carries the sum of the loads)")
	flag.IntVar(&o.portBase, "port-base", 19100, "first of the loopback ports used (about 100 above it)")
	flag.Parse()

	known := slices.Clone(builtinVariants)
	for _, ev := range o.extraVariant {
		name, snippet, ok := strings.Cut(ev, "=")
		if !ok || name == "" {
			fatalf("-variant %q: want name=snippet", ev)
		}
		known = append(known, variant{name: name, snippet: snippet})
	}
	var err error
	if o.variants, err = variantsNamed(known, strings.Split(variants, ","), o.baseBin); err != nil {
		fatalf("%v", err)
	}
	if !slices.ContainsFunc(o.variants, func(v variant) bool { return v.name == "caddy" }) {
		fatalf("-variants must include caddy: every figure is a ratio to it")
	}
	o.scenarios = strings.Split(scenarios, ",")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, o)
	if err != nil {
		fatalf("%v", err)
	}
	report := rep.markdown()
	fmt.Print(report)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(report), 0o644); err != nil {
			fatalf("writing %s: %v", o.out, err)
		}
	}
}

// variantsNamed returns the variants of known with the given names, in that order. A name
// "X@base" is variant X run by baseBin.
func variantsNamed(known []variant, names []string, baseBin string) ([]variant, error) {
	var vs []variant
	for _, name := range names {
		known0, onBase := strings.CutSuffix(name, "@base")
		if onBase && baseBin == "" {
			return nil, fmt.Errorf("variant %q needs -base-bin", name)
		}
		i := slices.IndexFunc(known, func(v variant) bool { return v.name == known0 })
		if i < 0 {
			return nil, fmt.Errorf("unknown variant %q", name)
		}
		v := known[i]
		if onBase {
			v.name, v.bin = name, baseBin
		}
		vs = append(vs, v)
	}
	return vs, nil
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "proxybench: "+format+"\n", args...)
	os.Exit(1)
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// binary returns the binary that runs v's proxy: its own, else def.
func (v variant) binary(def string) string {
	if v.bin != "" {
		return v.bin
	}
	return def
}
