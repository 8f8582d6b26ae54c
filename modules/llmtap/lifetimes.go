package llmtap

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/shadow/guard"
	"github.com/llmtap/llmtap/shadow/inproc"
	"github.com/llmtap/llmtap/shadow/mirror"
	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// Lifetimes. Caddy reloads a config by provisioning and starting the new one, then stopping
// and cleaning up the old one, while the old one's requests are still being served. What
// llmtap runs for longer than one config — the measurement engine, the recorders, the GPU
// sampler, the scrapers, the timeline, the guard loop, the shadow loads — is therefore held in
// one place, proc.pool (a caddy.UsagePool, what Caddy's own listeners and log writers use),
// under one key per feature: the first config that wants a runner creates it, each next config
// adopts it and reconfigures it in place (hold reports whether it was adopted), and the last
// config to let go destroys it. Nothing else in the package keeps state across configs: it is
// all in proc.

// proc is the process's llmtap state.
var proc = process{
	pool:      caddy.NewUsagePool(),
	recorders: map[string]*recorderEntry{},
	hub:       timeline.NewHub(),
	openGPU:   gpu.Open,
	idPrefix:  newIDPrefix(),
	mirror:    mirrorState{stats: new(mirror.Stats), gate: new(mirror.Gate), pairs: mirror.NewPairer(0, 0)},
	copyBuf:   sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }},
}

type process struct {
	// pool holds every runner shared across configs, by feature key (see hold).
	pool *caddy.UsagePool

	// engine is the running measurement engine (engine.go), nil when no config uses llmtap
	// and no stream of an unloaded one is still draining.
	engine atomic.Pointer[engine]

	// recorders indexes the running recorders by their key (record.RecordTo), for the record
	// sink (recorders.go); their lifetime is proc.pool's.
	recMu     sync.RWMutex
	recorders map[string]*recorderEntry
	// recDropped counts records lost to recording over the process's life, by reason.
	recDropped [numDropReasons]atomic.Uint64
	// logs is the export of records as OpenTelemetry log records (otellogs.go).
	logs logsState

	// runtimeMu serializes starting and stopping the recording started through the API
	// (connect_recording.go); runtimeRec is that recording.
	runtimeMu  sync.Mutex
	runtimeRec atomic.Pointer[runtimeEntry]

	// hub routes GPU samples, scrapes and records to the timeline and the energy
	// attributor.
	hub *timeline.Hub
	// gpu is the NVML sampler whose samples the hub takes (gpu.go); openGPU opens its source
	// (tests replace it); nvmlAbsentLogged makes "no NVML" one line per process.
	gpu              atomic.Pointer[gpu.Runner]
	openGPU          func() (gpu.Source, error)
	nvmlAbsentLogged atomic.Bool
	// keylessLogged makes "traces recorded without a fleet key" one line per process
	// (record.go).
	keylessLogged atomic.Bool
	// gpuSamples, when set, replaces the sampler as the source of the exported GPU readings
	// (otel.go).
	gpuSamples atomic.Pointer[func(dst []gpu.Sample) []gpu.Sample]

	// guard is the running guard loop and guardTargets what it pauses (shadow_guard.go).
	guard        atomic.Pointer[guard.Runner]
	guardTargets guard.Targets
	// shadows are the shadow loads by name (shadow.go).
	shadows inproc.Registry

	// mirror is the mirroring state every handler shares (mirror.go).
	mirror mirrorState

	// idPrefix and idCounter make request ids (requestid.go).
	idPrefix  string
	idCounter atomic.Uint64

	// copyBuf recycles the buffers of tapWriter.ReadFrom (writer.go).
	copyBuf sync.Pool

	// marks counts the shadow marks refused, by why (shadow_marker.go).
	marks struct{ forged, expired, replayed atomic.Uint64 }

	// dashboard is the dashboard's own listener while one is served (dashboard.go).
	dashboard atomic.Pointer[dashboardServer]
}

// mirrorState is what every mirroring handler shares.
type mirrorState struct {
	stats *mirror.Stats
	gate  *mirror.Gate
	pairs *mirror.Pairer
}

// Keys of the shared runners in proc.pool. Recorders and shadow loads add their identity to
// their feature's key.
const (
	keyEngine    = "engine"
	keyGPU       = "gpu"
	keyTimeline  = "timeline"
	keyScrape    = "scrape"
	keyGuard     = "guard"
	keyRecorder  = "recorder:"
	keyShadow    = "shadow:"
	keyDashboard = "dashboard"
)

// hold returns the runner of key, creating it with create when none runs; adopted reports
// that it was already running (held by another config), in which case the caller reconfigures
// it in place. Every successful hold is paired with one letGo.
func hold[T caddy.Destructor](key string, create func() (T, error)) (r T, adopted bool, err error) {
	v, adopted, err := proc.pool.LoadOrNew(key, func() (caddy.Destructor, error) { return create() })
	if err != nil {
		return r, false, err
	}
	return v.(T), adopted, nil
}

// letGo drops one hold on key; the last one destroys the runner (its Destruct).
func letGo(key string) error {
	_, err := proc.pool.Delete(key)
	return err
}

// runner is a runner an App holds across configs, logging through the config that adopted it
// last.
type runner interface {
	caddy.Destructor
	setLogger(*zap.Logger)
}

// adopt holds the runner of key for an App — creating it with create when none runs —, points
// its logger at the App's and configures it; when configure fails it lets go again.
func adopt[T runner](key string, logger *zap.Logger, create func(*liveLogger) T, configure func(T) error) (T, error) {
	r, _, err := hold(key, func() (T, error) { return create(newLiveLogger(logger)), nil })
	if err != nil {
		return r, err
	}
	r.setLogger(logger)
	if err := configure(r); err != nil {
		_ = letGo(key)
		var none T
		return none, err
	}
	return r, nil
}

// release lets go of the runner an App holds in *held, if any.
func release[T any](key string, held **T) {
	if *held != nil {
		*held = nil
		_ = letGo(key)
	}
}

// liveLogger is the logger of a long-lived runner. Caddy closes a config's log writers when it
// unloads the config, so a runner that outlives the config that created it logs through the
// logger of the last config that adopted it: each adoption sets it.
type liveLogger struct{ p atomic.Pointer[zap.Logger] }

func newLiveLogger(l *zap.Logger) *liveLogger {
	ll := new(liveLogger)
	ll.setLogger(l)
	return ll
}

func (l *liveLogger) setLogger(z *zap.Logger) {
	if z == nil {
		z = zap.NewNop()
	}
	l.p.Store(z)
}

func (l *liveLogger) log() *zap.Logger { return l.p.Load() }

// drainTimeout bounds how long an unloaded config's handlers wait for their streams to end
// before they let go of the engine and their recorders: a stream still running after it loses
// its record, counted in llmtap_recorder_dropped_total{reason="drain_timeout"} when it was to
// be recorded.
const drainTimeout = 5 * time.Minute

// waitZero waits until n is zero or d has passed, and reports whether it is zero.
func waitZero(n *atomic.Int64, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for n.Load() > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
