package commands

import (
	"flag"
	"fmt"
	"time"

	"github.com/llmtap/llmtap/loadtest"
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
