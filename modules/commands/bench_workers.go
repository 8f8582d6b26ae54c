package commands

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmtap/llmtap/loadtest"
	"github.com/llmtap/llmtap/shadow/loadgen"
)

// workerFlags split one workload across worker processes (docs/workers.md): bench and replay
// share them.
type workerFlags struct {
	worker  loadtest.Worker
	envErr  error
	startAt string
}

func (w *workerFlags) register(fs *flag.FlagSet) {
	env, err := loadtest.WorkerFromEnv()
	w.envErr = err
	fs.IntVar(&w.worker.Index, "worker-index", env.Index, "this worker's index, 0 … count-1, in a workload split across --worker-count processes (default $"+loadtest.EnvWorkerIndex+", else 0)")
	fs.IntVar(&w.worker.Count, "worker-count", env.Count, "worker processes the workload is split across (default $"+loadtest.EnvWorkerCount+", else 1)")
	fs.StringVar(&w.startAt, "start-at", "", "shared wall-clock start of the profiling phase, RFC 3339 or Unix seconds: every worker waits for it")
}

// resolve validates the flags.
func (w *workerFlags) resolve() (loadtest.Worker, time.Time, []error) {
	var errs []error
	if w.envErr != nil {
		errs = append(errs, w.envErr)
	}
	if err := w.worker.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--worker-index/--worker-count: %w", err))
	}
	at, err := loadtest.ParseStartAt(w.startAt)
	if err != nil {
		errs = append(errs, err)
	}
	return w.worker, at, errs
}

// workerDir is the default artifact folder of a worker: a folder per worker under the
// workload's, so that workers sharing a volume do not overwrite each other.
func workerDir(dir string, w loadtest.Worker) string {
	if !w.Split() {
		return dir
	}
	return filepath.Join(dir, "worker"+strconv.Itoa(w.Index))
}

// workerArrivals builds a worker's share of an open-loop schedule of rate arr.Rate: rate/N
// each, from a random stream of the worker's own so that the workers' arrivals are
// independent (N Poisson processes of rate λ/N superpose into one of rate λ); a constant rate
// is phased, worker i sending at (i + kN)/λ, so the workers together send the one-process
// schedule exactly. stream picks the random stream of the phase (profiling or warmup).
func workerArrivals(arr loadgen.ArrivalSpec, w loadtest.Worker, seed, stream uint64) (loadgen.Arrivals, error) {
	if !w.Split() {
		return arr.New(rand.New(rand.NewPCG(seed, stream)))
	}
	share := arr
	share.Rate = arr.Rate / float64(w.Count)
	a, err := share.New(rand.New(rand.NewPCG(seed, stream+uint64(w.Index+1)<<16)))
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(strings.TrimSpace(share.Pattern), loadgen.PatternConstant) {
		a = loadtest.Shifted(a, time.Duration(float64(w.Index)/arr.Rate*float64(time.Second)))
	}
	return a, nil
}
