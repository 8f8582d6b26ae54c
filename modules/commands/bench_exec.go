package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/llmtap/llmtap/internal/termsafe"
	"github.com/llmtap/llmtap/loadtest"
)

// executeMain runs a prepared spec for a command, serving the Connect API on apiListen while
// it runs (empty: nowhere), shows its progress and notes on stderr, prints the console report and turns the outcome into its exit
// code, with the run's result; hook (tests only) sees the spec before the run and the result after it.
func executeMain(ctx context.Context, spec *loadtest.Spec, apiListen string, stdout, stderr io.Writer, terminal bool, hook func(*loadtest.Spec, *loadtest.Result)) (loadtest.Result, int, error) {
	if hook != nil {
		hook(spec, nil)
	}
	watchProgress(spec, stderr, terminal)
	api, err := startBenchAPI(apiListen, spec.Label, stderr)
	if err != nil {
		return loadtest.Result{}, 1, err
	}
	defer api.Close()
	if api != nil {
		spec.Watch = api.setTap
	}
	// The generator allocates per request (the client's buffers, the records) and keeps little:
	// collecting four times less often costs a few MiB and leaves the cores to sending. GOGC in
	// the environment still wins.
	if _, set := os.LookupEnv("GOGC"); !set {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	res, err := loadtest.Run(ctx, *spec)
	if err == nil {
		err = loadtest.WriteConsole(termsafe.Writer(stdout), res.Export, res.Duration, res.Files) // model names and error messages are the server's
	}
	if hook != nil {
		hook(spec, &res)
	}
	if err != nil {
		return res, 1, err
	}
	if res.Counters.Completed == 0 {
		if errs := res.Export.Errors; len(errs) > 0 {
			return res, 1, fmt.Errorf("no request completed: %d failed with %s", errs[0].Count, errs[0].Details.Message)
		}
		return res, 1, errors.New("no request completed")
	}
	return res, 0, nil
}
