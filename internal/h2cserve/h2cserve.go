// Package h2cserve serves an http.Handler with HTTP/1.1 and cleartext HTTP/2 (h2c, prior
// knowledge) on one listener, and stops it at once: the mock inference server and the Connect
// API of a running bench or replay share it.
package h2cserve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// Start serves h on ln. Every request's context derives from a base context that stop cancels
// first, so that long streams end at once; stop then shuts the server down, waiting up to grace
// for its connections to close (closing them after that), and returns once the serving
// goroutine has returned. It is safe to call more than once.
func Start(ln net.Listener, h http.Handler, grace time.Duration) (stop func() error) {
	base, cancel := context.WithCancel(context.Background())
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	hs := &http.Server{Handler: h, Protocols: &p, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	return sync.OnceValue(func() error {
		cancel()
		ctx, done := context.WithTimeout(context.Background(), grace)
		defer done()
		err := hs.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, hs.Close())
		}
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	})
}
