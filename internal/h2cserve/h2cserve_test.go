package h2cserve

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestStartServesH2CAndStopEndsStreams: a request over cleartext HTTP/2 (prior knowledge) is
// served; a stream that would run until its client left ends when stop is called, well before
// the grace period, and stop returns nil.
func TestStartServesH2CAndStopEndsStreams(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started, ended := make(chan struct{}), make(chan struct{})
	stop := Start(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done() // a long stream: only its context ends it
		close(ended)
	}), time.Minute)
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: &protos, TLSClientConfig: &tls.Config{}}}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+ln.Addr().String(), nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 8)
	n, _ := io.ReadAtLeast(resp.Body, buf, 8)
	if got := string(buf[:n]); got != "HTTP/2.0" {
		t.Errorf("served over %q, want HTTP/2.0 (h2c)", got)
	}
	<-started
	done := make(chan error, 1)
	go func() { done <- stop() }()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream did not end when stop was called")
	}
	if err := <-done; err != nil {
		t.Errorf("stop: %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
}
