package mock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/net/http2"

	"github.com/llmtap/llmtap/internal/h1server"
	"github.com/llmtap/llmtap/internal/h2cserve"
)

// shutdownGrace is how long a stop waits for connections to close after
// in-flight responses were cancelled.
const shutdownGrace = 5 * time.Second

// Start serves s on addr (host:port; "" means 127.0.0.1:0, a free port on
// loopback) with HTTP/1.1 and unencrypted HTTP/2 (h2c, prior knowledge)
// on the same port. It returns the base URL ("http://127.0.0.1:PORT") and
// a stop function. Stop cancels every in-flight response (their request
// contexts are done), shuts the listener and connections down, and
// returns once the serving goroutine and every handler of s have
// returned; it is safe to call more than once. An HTTP/2 client that keeps
// an idle connection open delays stop by up to 1 s (the standard library's
// GOAWAY grace period).
func (s *Server) Start(addr string) (url string, stop func() error, err error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("mockllm: listening on %s: %w", addr, err)
	}
	if s.cfg.LeanHTTP {
		return s.startLean(ln)
	}
	stopServer := h2cserve.Start(ln, s, shutdownGrace)
	stop = sync.OnceValue(func() error {
		err := stopServer()
		s.active.Wait()
		if err != nil {
			return fmt.Errorf("mockllm: stopping: %w", err)
		}
		return nil
	})
	return "http://" + ln.Addr().String(), stop, nil
}

// ListenAndServe serves s on addr like Start until ctx is done, then stops
// it the same way and returns nil; it returns an error only when it cannot
// listen or serving fails.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	_, stop, err := s.Start(addr)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return stop()
}

// startLean serves s on ln with h1server (Config.LeanHTTP), h2c connections handed to
// golang.org/x/net/http2.
func (s *Server) startLean(ln net.Listener) (url string, stop func() error, err error) {
	base, cancel := context.WithCancel(context.Background())
	// net/http serves h2c only on listeners it accepts from, not on one connection handed
	// over after h1server read its preface, so x/net/http2's per-connection server stays.
	h2 := &http2.Server{} //lint:ignore SA1019 no net/http API serves one handed-over h2c connection
	ls := &h1server.Server{Handler: s, BaseContext: base, Fallback: func(c net.Conn) {
		//lint:ignore SA1019 as above
		h2.ServeConn(c, &http2.ServeConnOpts{Context: base, Handler: s})
	}}
	served := make(chan error, 1)
	go func() { served <- ls.Serve(ln) }()
	stop = sync.OnceValue(func() (err error) {
		cancel()
		ls.Close()
		if serr := <-served; !errors.Is(serr, h1server.ErrServerClosed) {
			err = fmt.Errorf("mockllm: stopping: %w", serr)
		}
		s.active.Wait()
		return err
	})
	return "http://" + ln.Addr().String(), stop, nil
}
