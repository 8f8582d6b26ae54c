package mock

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestStartServesHTTP1AndH2C(t *testing.T) {
	for _, lean := range []bool{false, true} {
		t.Run(fmt.Sprintf("lean=%v", lean), func(t *testing.T) { testStartServes(t, lean) })
	}
}

func testStartServes(t *testing.T, lean bool) {
	s, err := New(Config{LogEvents: true, LeanHTTP: lean})
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := s.Start("")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("url %q is not on loopback", url)
	}

	var h2 http.Protocols
	h2.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &h2}
	defer tr.CloseIdleConnections()
	for _, c := range []struct {
		client *http.Client
		id     string
		proto  string
	}{
		{http.DefaultClient, "h1", "HTTP/1.1"},
		{&http.Client{Transport: tr}, "h2", "HTTP/2.0"},
	} {
		req, _ := http.NewRequest(http.MethodPost, url+chatPath, strings.NewReader(`{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":3}`))
		req.Header.Set("X-Request-Id", c.id)
		resp, err := c.client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.proto, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Proto != c.proto || summarize(t, body).contentEv != 3 {
			t.Errorf("%s: got %s with %q", c.proto, resp.Proto, body)
		}
		if tr, _ := s.TraceByID(c.id); tr.Proto != c.proto {
			t.Errorf("trace proto %q, want %q", tr.Proto, c.proto)
		}
	}
	tr.CloseIdleConnections() // else HTTP/2's graceful shutdown waits 1 s for the client
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("server still answers after stop")
	}
}

// TestStopEndsStreams checks stop does not wait for a long stream: it
// cancels it and joins its handler.
func TestStopEndsStreams(t *testing.T) {
	for _, lean := range []bool{false, true} {
		t.Run(fmt.Sprintf("lean=%v", lean), func(t *testing.T) { testStopEndsStreams(t, lean) })
	}
}

func testStopEndsStreams(t *testing.T, lean bool) {
	s, err := New(Config{ITL: 50 * time.Millisecond, LeanHTTP: lean})
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post(url+chatPath, "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":10000}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- stop() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("stop: %v", err)
		}
	case <-time.After(10 * time.Second): // the stream alone would run 500 s
		t.Fatal("stop waited for the stream")
	}
	if st := s.Stats(); st.InFlight != 0 || st.Canceled != 1 {
		t.Errorf("stats after stop %+v: want the stream canceled and joined", st)
	}
}

func TestListenAndServe(t *testing.T) {
	s, _ := New(Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0") // reserve a free port, then release it
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe(ctx, addr) }()
	var resp *http.Response
	for range 200 { // until it listens, at most 2 s
		if resp, err = http.Get("http://" + addr + "/health"); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe returned %v after cancel", err)
	}
	if err := s.ListenAndServe(context.Background(), "256.0.0.1:1"); err == nil {
		t.Error("an unusable address did not fail")
	}
}
