// Package process is llmtap's state for the life of a proxy process, as a plain-Go value: the
// measurement engine (tap) and its sinks, the timeline hub, the recorders, the mirror state,
// the SLO tracker, the guard rails, the shadow loads, the shadow marker and its counts, and the
// Prometheus collectors over all of them. The Caddy layer (modules/llmtap) holds one Process in
// its llmtap app across config reloads; tests and the demo build or reach one. It imports no
// Caddy package.
//
// Runners that several configs share (the GPU sampler, the scrapers, the timeline, the guard
// loop, each shadow load, each recorder) are held in the Process by key: the first holder
// creates a runner, each next one adopts it and reconfigures it in place, and the last one to
// let go stops it (see Hold).
package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/llmtap/llmtap/shadow/guard"
	"github.com/llmtap/llmtap/shadow/inproc"
	"github.com/llmtap/llmtap/shadow/marker"
	"github.com/llmtap/llmtap/shadow/mirror"
	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/headroom"
	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/promexport"
	"github.com/llmtap/llmtap/telemetry/slo"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/tap"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// Options configure a Process. The zero value is a process with a random marker key, classic
// histograms, NVML as the GPU source and no logs.
type Options struct {
	// Logger returns the logger of process-wide work that belongs to no config (the engine,
	// drains, recorders closing), named name; it is called at the time of each log, so a host
	// can return a logger whose writers are open then. Nil: no logs.
	Logger func(name string) *zap.Logger
	// MarkerKey is the shadow marker's key, 32 bytes in hex or base64 (LLMTAP_MARKER_KEY);
	// empty draws one. A key that does not parse is reported by MarkerKeyErr.
	MarkerKey string
	// NativeHistograms adds Prometheus native histograms to the gen_ai_* histograms.
	NativeHistograms bool
	// OpenGPU opens the GPU source of the sampler. Nil: NVML (gpu.Open).
	OpenGPU func() (gpu.Source, error)
	// GPUSamples, when set, replaces the sampler as the source of the OpenTelemetry GPU
	// instruments: it appends the latest sample of every GPU to dst.
	GPUSamples func(dst []gpu.Sample) []gpu.Sample
}

// Process is llmtap's process-wide state. Make one with New; Close stops it.
type Process struct {
	opts Options

	tap  *tap.Tap
	otel *otelExport // nil unless the OTEL_* environment turns export on (otel.go)

	holds holds

	// Models and Tenants bound model names and tenants, in length and number, with the one
	// rule of telemetry/labelcap: /metrics, the OTel export, the summary and the timeline
	// share them, so they give the same labels their own series.
	Models, Tenants *labelcap.Set
	requests        *promexport.Requests
	usage           *promexport.Usage
	metrics         metrics

	// SLO counts the live requests meeting and missing the handlers' SLOs.
	SLO *slo.Tracker
	// Passive holds the handlers' passive_headroom estimators, fed scrapes.
	Passive headroom.Registry
	// Hub routes GPU samples, scrapes and records to the timeline and the energy attributor.
	Hub *timeline.Hub
	// Mirror is the mirroring state every handler shares.
	Mirror MirrorState

	rec  recorders // recorders.go
	logs logsState // otellogs.go

	gpu              atomic.Pointer[gpu.Runner]
	nvmlAbsentLogged atomic.Bool
	keylessLogged    atomic.Bool

	guard        atomic.Pointer[guard.Runner]
	guardTargets guard.Targets
	shadows      inproc.Registry

	marker    *marker.Signer
	markerErr error
	marks     struct{ forged, expired, replayed atomic.Uint64 }

	idPrefix  string
	idCounter atomic.Uint64

	// CopyBuffers recycles the 32 KiB buffers of the proxy's response copies.
	CopyBuffers sync.Pool
}

// MirrorState is what every mirroring handler shares: counters, the pause switch of the guard
// rails (Pause stops new copies, Resume starts them again) and the live/mirror pairs.
type MirrorState struct {
	Stats *mirror.Stats
	Gate  *mirror.Gate
	Pairs *mirror.Pairer
}

// New makes a Process and starts its measurement engine and, when the OTEL_* environment asks
// for it, its OpenTelemetry export.
func New(o Options) *Process {
	p := &Process{
		opts:    o,
		Models:  labelcap.New(labelcap.DefaultMax),
		Tenants: labelcap.New(labelcap.DefaultMax),
		Hub:     timeline.NewHub(),
		Mirror:  MirrorState{Stats: new(mirror.Stats), Gate: new(mirror.Gate), Pairs: mirror.NewPairer(0, 0)},
	}
	p.holds.m = map[string]*held{}
	p.rec.byKey = map[string]*Recorder{}
	p.CopyBuffers.New = func() any { b := make([]byte, 32<<10); return &b }
	var id [6]byte
	_, _ = rand.Read(id[:])
	p.idPrefix = hex.EncodeToString(id[:]) + "-"
	p.marker, p.markerErr = newMarker(o.MarkerKey)
	p.SLO = slo.NewTracker(p.Models.Get, nil)
	p.guardTargets.Add("mirror", p.Mirror.Gate)
	p.shadows.OnAdd = func(r *inproc.Runner) func() { return p.guardTargets.Add("shadow/"+r.Name(), r) }
	p.newMetrics()

	p.tap = tap.New(tap.Options{Stats: stats.Options{Models: p.Models, Tenants: p.Tenants}})
	p.tap.AddSink(p.requests)
	p.tap.AddSink(p.usage)
	p.tap.AddSink(recordSink{p})
	p.tap.AddSink(logSink{p})       // before startOTel's span sink: a log record takes the request's span ids
	p.tap.AddEnricher(p.Hub.Enrich) // GPU figures per record
	p.tap.AddSink(p.Hub)            // the timeline's request metrics
	p.tap.AddSink(p.Mirror.Pairs)
	p.tap.AddSink(shadowSink{p}) // guard rails and headroom probes
	p.tap.AddSink(p.SLO)         // SLO attainment
	p.otel = p.startOTel()
	p.Log("engine").Debug("llmtap measurement engine started")
	return p
}

// Close drains the record pipeline into the sinks and stops the exporters. Runners still held
// are left to their holders.
func (p *Process) Close(ctx context.Context) error {
	err := p.tap.Close()
	p.otel.shutdown(ctx, p)
	return err
}

// Tap is the measurement engine.
func (p *Process) Tap() *tap.Tap { return p.tap }

// InFlight is the number of requests being measured.
func (p *Process) InFlight() int64 { return p.tap.InFlight() }

// RecordsDropped is the number of records the engine's pipeline dropped.
func (p *Process) RecordsDropped() uint64 { return p.tap.Dropped() }

// Log is the process-wide logger named name (Options.Logger), a no-op one without.
func (p *Process) Log(name string) *zap.Logger {
	if p.opts.Logger == nil {
		return zap.NewNop()
	}
	return p.opts.Logger("llmtap." + name)
}

// NewRequestID returns a request id: a per-process random prefix and a counter, unique, cheap,
// and sortable by arrival within one process.
func (p *Process) NewRequestID() string {
	buf := make([]byte, 0, len(p.idPrefix)+12)
	buf = append(buf, p.idPrefix...)
	buf = strconv.AppendUint(buf, p.idCounter.Add(1), 10)
	return string(buf)
}

// OnceKeyless reports true the first time it is called: "traces recorded without a fleet key"
// is logged once per process.
func (p *Process) OnceKeyless() bool { return !p.keylessLogged.Swap(true) }

// Runners returns how many runners are held (0 once every holder let go).
func (p *Process) Runners() int {
	p.holds.mu.Lock()
	defer p.holds.mu.Unlock()
	return len(p.holds.m)
}

// Streams counts the streams of one handler being measured, so that a host holds the Process
// and the handler's recorder until its last stream has ended; Abandon marks the streams still
// running when it stopped waiting, whose records then lose their recorder.
type Streams struct {
	active    atomic.Int64
	abandoned atomic.Bool
}

// Begin counts a stream that starts; End one that ends.
func (s *Streams) Begin() { s.active.Add(1) }

// End counts a stream that ends.
func (s *Streams) End() { s.active.Add(-1) }

// Active is the number of streams running.
func (s *Streams) Active() int64 { return s.active.Load() }

// Wait waits until no stream runs or deadline has passed, and reports whether none runs.
func (s *Streams) Wait(deadline time.Time) bool {
	for s.active.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// Abandon marks the streams still running as outliving their host's wait.
func (s *Streams) Abandon() { s.abandoned.Store(true) }

// Abandoned reports whether Abandon was called.
func (s *Streams) Abandoned() bool { return s.abandoned.Load() }
