package llmtap

import (
	"context"
	"os"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/internal/process"
)

// Lifetimes. Caddy reloads a config by provisioning and starting the new one, then stopping
// and cleaning up the old one, while the old one's requests are still being served. What
// llmtap runs for longer than one config is therefore one process.Process, held in procs (a
// caddy.UsagePool, what Caddy's own listeners and log writers use) by every llmtap app: the
// first config creates it, each next one adopts it, and the last one to let go — once the
// streams of its handlers have ended, at most drainTimeout later — closes it. The Process
// holds the feature runners (GPU sampler, scrapers, timeline, guard, shadow loads, recorders)
// the same way, by key, each reconfigured in place by the config that adopts it. The llmtap
// app is the only place that acquires the Process; handlers reach it through the app
// (ctx.App("llmtap")). These two variables are the package's only state.
var (
	procs   = caddy.NewUsagePool()
	running atomic.Pointer[process.Process] // the held Process, nil when no config holds one
)

// keyProcess is the Process's key in procs.
const keyProcess = "process"

// NativeHistogramsEnv names the variable that adds Prometheus native histograms to the
// gen_ai_* histograms of /metrics: "on" adds them, "off" or unset leaves the classic buckets
// alone (another value is logged and leaves them off). It is read when the Process starts,
// because its collectors are created with it. The classic buckets stay: a scraper that does
// not ask for native histograms (the text formats; Prometheus without
// --enable-feature=native-histograms) sees what it saw before, while a Prometheus with the
// feature ingests the native histogram instead.
const NativeHistogramsEnv = "LLMTAP_PROMETHEUS_NATIVE_HISTOGRAMS"

// MarkerKeyEnv names the environment variable that gives the shadow marker's key: 32 bytes in
// hex (64 digits) or base64. Instances of a fleet that share it accept each other's marks
// (a shadow load on one instance whose requests a load balancer sends to another). Unset, the
// key is drawn from crypto/rand once per process and never leaves it. A key that does not
// parse fails the provisioning of every llmtap handler.
const MarkerKeyEnv = "LLMTAP_MARKER_KEY"

// heldProcess is the Process as a pool value.
type heldProcess struct{ *process.Process }

// Destruct closes the Process: the record pipeline drains into the sinks, then the recorders
// still open and the exporters close.
func (h heldProcess) Destruct() error {
	running.CompareAndSwap(h.Process, nil)
	return h.Close(context.Background())
}

// acquireProcess holds the Process, making it from the environment when none runs; every call
// is paired with one releaseProcess.
func acquireProcess() (*process.Process, error) {
	return holdProcess(func() process.Options {
		return process.Options{MarkerKey: os.Getenv(MarkerKeyEnv), NativeHistograms: nativeHistograms()}
	})
}

// holdProcess holds the Process, making it with the options of opts, logging through Caddy's
// default logger, when none runs.
func holdProcess(opts func() process.Options) (*process.Process, error) {
	v, _, err := procs.LoadOrNew(keyProcess, func() (caddy.Destructor, error) {
		o := opts()
		o.Logger = func(name string) *zap.Logger { return caddy.Log().Named(name) }
		o.PlanRecording = planRecording
		p := process.New(o)
		running.Store(p)
		return heldProcess{p}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(heldProcess).Process, nil
}

func releaseProcess() { _, _ = procs.Delete(keyProcess) }

// nativeHistograms reports whether NativeHistogramsEnv is "on".
func nativeHistograms() bool {
	v := os.Getenv(NativeHistogramsEnv)
	on, ok := process.NativeHistograms(v)
	if !ok {
		logger("metrics").Warn("native histograms stay off: the value is neither on nor off",
			zap.String("variable", NativeHistogramsEnv), zap.String("value", v))
	}
	return on
}

// logger is the logger of process-wide work that belongs to no config (drains): Caddy's
// default logger at the time of the call, whose writers are open.
func logger(name string) *zap.Logger { return caddy.Log().Named("llmtap." + name) }

// drainTimeout bounds how long an unloaded config's handlers wait for their streams to end
// before they let go of the engine and their recorders: a stream still running after it loses
// its record, counted in llmtap_recorder_dropped_total{reason="drain_timeout"} when it was to
// be recorded.
const drainTimeout = 5 * time.Minute
