package commands

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/api"
	"github.com/llmtap/llmtap/internal/h2cserve"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// benchAPI serves the Connect API (llmtap.v1.TapService, proto/llmtap/v1) of a running bench
// or replay on --api-listen, so `llmtap top --admin ADDR` or any Connect, gRPC or gRPC-Web
// client can watch it as it would a proxy: the same engine measures both. It serves HTTP/1.1
// and cleartext HTTP/2 (h2c, for gRPC). The figures are those of the phase running (warmup,
// then profiling); shadow and recording control are not part of a benchmark.
type benchAPI struct {
	tap  atomic.Pointer[tap.Tap]
	stop func() error
}

// startBenchAPI listens on addr and serves the API; an empty addr serves nothing (nil).
func startBenchAPI(addr, label string, stderr io.Writer) (*benchAPI, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--api-listen: %w", err)
	}
	b := &benchAPI{}
	svc := api.New(api.Options{
		Host:        func() api.Host { return engineHost{tap: b.tap.Load()} },
		NoTap:       "llmtap " + label + " has not started measuring yet",
		NoShadow:    "llmtap " + label + " sends no shadow load: its own load is the benchmark",
		NoRecording: "llmtap " + label + " writes every request to profile_export.jsonl in its artifact folder; there is no recording to control",
	})
	path, h := svc.Handler()
	mux := http.NewServeMux()
	mux.Handle(path, h)
	b.stop = h2cserve.Start(ln, mux, 2*time.Second)
	at := ln.Addr().String()
	fmt.Fprintf(stderr, "%s: API on http://%s (watch it with: llmtap top --admin %s)\n", label, at, at)
	return b, nil
}

// engineHost is a host with a measurement engine only.
type engineHost struct {
	api.NoHost
	tap *tap.Tap
}

func (h engineHost) Tap() *tap.Tap { return h.tap }

// setTap makes t the engine the API reads.
func (b *benchAPI) setTap(t *tap.Tap) {
	if b != nil {
		b.tap.Store(t)
	}
}

// Close ends the streams being served and stops the server.
func (b *benchAPI) Close() error {
	if b == nil {
		return nil
	}
	return b.stop()
}
