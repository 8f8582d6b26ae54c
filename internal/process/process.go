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
// let go closes it (Close(ctx), see Hold). Closing the Process closes its record pipeline,
// which drains into the sinks and then closes the recorders still open and the exporters.
package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/llmtap/llmtap/export/otel"
	"github.com/llmtap/llmtap/export/prom"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/internal/keyparse"
	"github.com/llmtap/llmtap/load/guard"
	"github.com/llmtap/llmtap/load/marker"
	"github.com/llmtap/llmtap/load/shadow"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/headroom"
	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/pipeline"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/recorder"
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
	// PlanRecording makes the recorder options of a recording started through the API (the
	// Host's Recording) from the request: those of a record block with the request's fields.
	// Nil: recording cannot be controlled through the API.
	PlanRecording func(*llmtapv1.RecordingStartRequest) (recorder.Options, error)
}

// Process is llmtap's process-wide state. Make one with New; Close stops it.
type Process struct {
	opts Options

	tap  *tap.Tap
	otel *otelExport // nil unless the OTEL_* environment turns export on

	holds holds

	// Models and Tenants bound model names and tenants, in length and number, with the one
	// rule of telemetry/labelcap: /metrics, the OTel export, the summary and the timeline
	// share them, so they give the same labels their own series.
	Models, Tenants *labelcap.Set
	requests        *prom.Requests
	usage           *prom.Usage
	metrics         metrics

	// SLOTracker counts the live requests meeting and missing the handlers' SLOs.
	SLOTracker *slo.Tracker
	// Passive holds the handlers' passive_headroom estimators, fed scrapes.
	Passive headroom.Registry
	// Hub routes GPU samples, scrapes and records to the timeline and the energy attributor.
	Hub *timeline.Hub
	// Mirroring is the mirroring state every handler shares.
	Mirroring MirrorState

	rec  recorders
	logs logsState

	gpu              atomic.Pointer[gpu.Runner]
	nvmlAbsentLogged atomic.Bool
	keylessLogged    atomic.Bool

	guard        atomic.Pointer[guard.Runner]
	guardTargets guard.Targets
	shadows      shadow.Registry

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
		opts:      o,
		Models:    labelcap.New(labelcap.DefaultMax),
		Tenants:   labelcap.New(labelcap.DefaultMax),
		Hub:       timeline.NewHub(),
		Mirroring: MirrorState{Stats: new(mirror.Stats), Gate: new(mirror.Gate), Pairs: mirror.NewPairer(0, 0)},
	}
	p.holds.m = map[string]*held{}
	p.rec.byKey = map[string]*Recorder{}
	p.CopyBuffers.New = func() any { b := make([]byte, 32<<10); return &b }
	var id [6]byte
	_, _ = rand.Read(id[:])
	p.idPrefix = hex.EncodeToString(id[:]) + "-"
	p.marker, p.markerErr = newMarker(o.MarkerKey)
	p.SLOTracker = slo.NewTracker(p.Models.Get, nil)
	p.guardTargets.Add("mirror", p.Mirroring.Gate)
	p.shadows.OnAdd = func(r *shadow.Runner) func() { return p.guardTargets.Add("shadow/"+r.Name(), r) }
	p.newMetrics()

	p.tap = tap.New(tap.Options{Stats: stats.Options{Models: p.Models, Tenants: p.Tenants}})
	p.tap.AddSink(p.requests)
	p.tap.AddSink(p.usage)
	p.tap.AddRouted(p.record)
	p.tap.AddCloser(p.closeRecorders)
	p.tap.AddRouted(p.emitLog)      // before startOTel's span sink: a log record takes the request's span ids
	p.tap.AddEnricher(p.Hub.Enrich) // GPU figures per record
	p.tap.AddSink(p.Hub)            // the timeline's request metrics
	p.tap.AddRouted(func(x pipeline.Routed) { p.Mirroring.Pairs.ConsumeJudged(x.Record, x.Route.SLO) })
	p.tap.AddSink(shadowSink{p})                                                           // guard rails and headroom probes
	p.tap.AddRouted(func(x pipeline.Routed) { p.SLOTracker.Count(x.Record, x.Route.SLO) }) // SLO attainment
	p.otel = p.startOTel()
	p.Log("engine").Debug("llmtap measurement engine started")
	return p
}

// Close drains the record pipeline into the sinks, closes the recorders still open (the
// runtime recording's too) and stops the exporters. Other runners still held are left to their
// holders.
func (p *Process) Close(ctx context.Context) error {
	err := p.tap.Close(ctx) // and the sinks that drain: the OTel metrics
	p.otel.shutdown(ctx, p)
	return err
}

// Tap is the measurement engine, nil for a nil Process.
func (p *Process) Tap() *tap.Tap {
	if p == nil {
		return nil
	}
	return p.tap
}

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

// OpenTelemetry export lives with the measurement engine: it is configured once, from the
// standard OTEL_* environment, when the engine starts, and flushed and stopped when the engine
// stops. Without OTEL_* variables nothing is created and the request path pays one nil check.

// otelExport is the engine's OpenTelemetry state; a nil *otelExport means export is off.
type otelExport struct {
	providers *otel.Providers
	metrics   *otel.Metrics
	tracer    *otel.Tracer // nil when trace export is off
}

// startOTel builds the providers the environment asks for and adds their sinks to the tap. It
// returns nil when the environment enables no signal, and logs (rather than fails) when the
// environment is invalid, so that a bad OTEL_* variable never takes the proxy down.
func (p *Process) startOTel() *otelExport {
	log := p.Log("otel")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	prov, err := otel.FromEnv(ctx, "")
	if err != nil {
		log.Error("OpenTelemetry export is off", zap.Error(err))
		return nil
	}
	if prov.MeterProvider == nil && prov.TracerProvider == nil {
		return nil
	}
	o := &otelExport{providers: prov}
	if prov.MeterProvider != nil {
		m, err := otel.NewMetrics(prov.MeterProvider, otel.Options{
			Models:      p.Models,
			Tenants:     p.Tenants,
			LatestGenAI: otel.LatestGenAI(nil), // OTEL_SEMCONV_STABILITY_OPT_IN
			GPU:         p.Hub.LatestGPU,
		})
		if err != nil {
			log.Error("OpenTelemetry metrics are off", zap.Error(err))
		} else {
			o.metrics = m
			p.tap.AddSink(m)
		}
	}
	if prov.TracerProvider != nil {
		o.tracer = otel.NewTracer(prov.TracerProvider, prov.Propagator)
		p.tap.AddRouted(func(x pipeline.Routed) { otel.EndSpan(x.Record, x.Span) })
	}
	log.Info("OpenTelemetry export on", zap.Bool("metrics", o.metrics != nil), zap.Bool("traces", o.tracer != nil),
		zap.String("service.instance.id", prov.InstanceID))
	return o
}

// Tracer is the tracer of the request spans, nil when trace export is off.
func (p *Process) Tracer() *otel.Tracer {
	if p.otel == nil {
		return nil
	}
	return p.otel.tracer
}

// shutdown flushes what is pending and stops the providers, within 5 s. It runs after the
// record pipeline has drained, so the last records' measurements and spans are exported.
func (o *otelExport) shutdown(ctx context.Context, p *Process) {
	if o == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := o.providers.Shutdown(ctx); err != nil {
		p.Log("otel").Warn("flushing OpenTelemetry export", zap.Error(err))
	}
}

// newMarker makes the signer of the marker header of llmtap's own traffic (shadow load, trace
// replay) from key (hex or base64); a key that does not parse is reported, and a random key
// used meanwhile.
func newMarker(key string) (*marker.Signer, error) {
	v := strings.TrimSpace(key)
	if v == "" {
		return marker.New(marker.Options{})
	}
	k, err := keyparse.Parse(v, marker.KeyLen, marker.KeyLen)
	if err == nil {
		var s *marker.Signer
		if s, err = marker.New(marker.Options{Key: k}); err == nil {
			return s, nil
		}
	}
	s, _ := marker.New(marker.Options{})
	return s, err
}

// MarkerKeyErr reports why Options.MarkerKey cannot be used, or nil.
func (p *Process) MarkerKeyErr() error { return p.markerErr }

// markedClasses are the classes a verified mark may carry; any other class in a mark that
// verifies (there is none, since only this process signs) would still be live.
var markedClasses = map[string]string{
	record.ClassShadow: record.ClassShadow,
	record.ClassReplay: record.ClassReplay,
	record.ClassMirror: record.ClassMirror,
}

// Classify returns the traffic class of r: the class of a marker header signed with the key,
// unexpired, used for the first time and (when this process minted it) of a load this process
// still has; else live. An accepted mark is removed from r before it goes upstream, so
// upstreams (and their logs) never see one; a refused value is counted by reason and left in
// place, since a live request passes unchanged.
func (p *Process) Classify(r *http.Request) string {
	vs := r.Header.Values(marker.Header)
	if len(vs) == 0 {
		return record.ClassLive
	}
	if len(vs) != 1 {
		p.marks.forged.Add(1)
		return record.ClassLive
	}
	m, res := p.marker.Verify(vs[0])
	if res == marker.OK && p.marker.Own(m) && !p.loadRunning(m.Load) {
		res = marker.Expired
	}
	class, known := markedClasses[m.Class]
	switch {
	case res == marker.OK && known:
		r.Header.Del(marker.Header)
		return class
	case res == marker.Expired:
		p.marks.expired.Add(1)
	case res == marker.Replayed:
		p.marks.replayed.Add(1)
	default:
		p.marks.forged.Add(1)
	}
	return record.ClassLive
}

// loadRunning reports whether a shadow load with that marker load id is configured in this
// process.
func (p *Process) loadRunning(id string) bool {
	for _, r := range p.shadows.Running() {
		if marker.LoadID(r.Name()) == id {
			return true
		}
	}
	return false
}

// Mark sets a fresh mark of class, minted by the load named load, on h.
func (p *Process) Mark(h http.Header, class, load string) {
	h.Set(marker.Header, p.marker.Sign(class, load))
}

// RefusedMarks returns the marks refused since the process started: forged, expired and
// replayed.
func (p *Process) RefusedMarks() (forged, expired, replayed uint64) {
	return p.marks.forged.Load(), p.marks.expired.Load(), p.marks.replayed.Load()
}
