// Command llmtap-gpuprobe checks GPU sampling on a real host: it opens the
// system's NVML, prints the driver and GPUs, polls every GPU at --interval for
// --duration through the same Sampler llmtap uses, writes every sample as a
// JSON line to stdout (and to --out), and ends with a summary per GPU that
// includes how long one poll of NVML took and whether the energy counter
// agrees with integrated power.
//
// Samples go to stdout; the header, errors and the summary go to stderr, so
// stdout stays valid JSON Lines.
//
// Exit status: 0 on success, 1 on a failure, 2 when the host has no usable
// NVML (no library, no driver, no GPU, or a build without cgo).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/llmtap/llmtap/telemetry/gpu"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, gpu.Open))
}

// run is main with its dependencies passed in, so tests can drive it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, open func() (gpu.Source, error)) int {
	fs := flag.NewFlagSet("llmtap-gpuprobe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	interval := fs.Duration("interval", gpu.DefaultInterval, "time between polls of every GPU")
	duration := fs.Duration("duration", 5*time.Second, "how long to sample")
	outPath := fs.String("out", "", "also write the JSON lines to this file (created 0600, truncated)")
	if err := fs.Parse(args); err != nil {
		return 1
	}
	if *interval <= 0 || *duration <= 0 {
		fmt.Fprintln(stderr, "llmtap-gpuprobe: --interval and --duration must be positive")
		return 1
	}

	src, err := open()
	if err != nil {
		fmt.Fprintf(stderr, "llmtap-gpuprobe: opening NVML: %v\n", err)
		if errors.Is(err, gpu.ErrNoNVML) {
			return 2
		}
		return 1
	}
	defer src.Close()

	var info gpu.Info
	if d, ok := src.(interface{ Info() gpu.Info }); ok {
		info = d.Info()
	}
	fmt.Fprintf(stderr, "driver %s, NVML %s, %d GPU(s)\n", info.DriverVersion, info.NVMLVersion, len(info.Devices))
	for _, d := range info.Devices {
		fmt.Fprintf(stderr, "  GPU %d: %s %s\n", d.Index, d.Name, d.UUID)
	}

	sink := stdout
	if *outPath != "" {
		f, err := os.OpenFile(*outPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "llmtap-gpuprobe: %v\n", err)
			return 1
		}
		defer f.Close()
		sink = io.MultiWriter(stdout, f)
	}

	timed := &timedSource{src: src}
	polls := int(*duration / *interval) + 2
	s := gpu.NewSampler(timed, gpu.Options{
		Interval: *interval,
		Capacity: polls * max(1, len(info.Devices)),
		OnError:  func(err error) { fmt.Fprintf(stderr, "llmtap-gpuprobe: sampling: %v\n", err) },
	})
	enc := json.NewEncoder(sink)
	var writeErr error
	s.Subscribe(func(batch []gpu.Sample) {
		for i := range batch {
			if err := enc.Encode(&batch[i]); err != nil && writeErr == nil {
				writeErr = err
			}
		}
	})

	runCtx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	_ = s.Run(runCtx) // until the duration has passed or NVML went away (s.Err, below)

	writeSummary(stderr, info, s.Recent(nil), timed.stats())
	switch {
	case writeErr != nil:
		fmt.Fprintf(stderr, "llmtap-gpuprobe: writing samples: %v\n", writeErr)
		return 1
	case s.Err() != nil:
		return 2
	}
	return 0
}

// timedSource measures how long each Sample call on the wrapped Source
// takes, which is the cost of polling NVML that llmtap pays every interval.
type timedSource struct {
	src gpu.Source

	mu       sync.Mutex
	calls    int
	total    time.Duration
	min, max time.Duration
}

func (t *timedSource) Sample(dst []gpu.Sample) ([]gpu.Sample, error) {
	start := time.Now()
	dst, err := t.src.Sample(dst)
	d := time.Since(start)
	t.mu.Lock()
	if t.calls == 0 || d < t.min {
		t.min = d
	}
	t.max = max(t.max, d)
	t.calls++
	t.total += d
	t.mu.Unlock()
	return dst, err
}

// Close does nothing: run closes the wrapped Source itself.
func (t *timedSource) Close() error { return nil }

type callStats struct {
	calls        int
	mean, lo, hi time.Duration
}

func (t *timedSource) stats() callStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.calls == 0 {
		return callStats{}
	}
	return callStats{calls: t.calls, mean: t.total / time.Duration(t.calls), lo: t.min, hi: t.max}
}
