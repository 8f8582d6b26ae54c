package mock

import (
	"bytes"
	stdjson "encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const (
	benchUnaryBody  = `{"model":"m","messages":[{"role":"user","content":"say something"}],"max_tokens":16}`
	benchStreamBody = `{"model":"m","messages":[{"role":"user","content":"say something"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":256}`
)

// BenchmarkUnaryHTTP measures small non-streaming requests over loopback
// HTTP/1.1 with keep-alive, zero delays: the mock's request rate ceiling.
func BenchmarkUnaryHTTP(b *testing.B) {
	s, _ := New(Config{})
	ts := httptest.NewServer(s)
	defer ts.Close()
	client := ts.Client()
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		resp, err := client.Post(ts.URL+chatPath, "application/json", strings.NewReader(benchUnaryBody))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// BenchmarkStreamHTTP measures a 256-token chat stream with usage over
// loopback, zero delays, one token per event: the mock's event rate
// ceiling when every event is flushed.
func BenchmarkStreamHTTP(b *testing.B) {
	s, _ := New(Config{RoleChunk: true})
	ts := httptest.NewServer(s)
	defer ts.Close()
	client := ts.Client()
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		resp, err := client.Post(ts.URL+chatPath, "application/json", strings.NewReader(benchStreamBody))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	b.ReportMetric(float64(s.Stats().Events)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkServeHTTP measures the handler alone, without a network, so
// its allocations per request are visible.
func BenchmarkServeHTTP(b *testing.B) {
	for _, bc := range []struct {
		name, body string
		cfg        Config
	}{
		{"unary", benchUnaryBody, Config{}},
		{"unary-approx", benchUnaryBody, Config{PromptCounter: PromptApprox}},
		{"stream256", benchStreamBody, Config{RoleChunk: true}},
		{"stream256x4", benchStreamBody, Config{RoleChunk: true, TokensPerChunk: 4}},
		{"stream256-traced", benchStreamBody, Config{RoleChunk: true, LogEvents: true, LogLimit: 64}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, _ := New(bc.cfg)
			body := &resettableBody{}
			req := httptest.NewRequest(http.MethodPost, chatPath, body)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				body.Reset(bc.body)
				clear(w.h)
				s.ServeHTTP(w, req)
			}
			if ev := s.Stats().Events; ev > 0 {
				b.ReportMetric(float64(ev)/time.Since(start).Seconds(), "events/s")
			}
		})
	}
}

type resettableBody struct{ bytes.Reader }

func (r *resettableBody) Reset(s string) { r.Reader.Reset([]byte(s)) }
func (*resettableBody) Close() error     { return nil }

// discardWriter is a flushable http.ResponseWriter that drops the body.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Flush()                      {}

// BenchmarkUnaryServers compares the two servers the mock can run on (Config.LeanHTTP) under
// the same client: run with -cpu 1 so that ns/op is the CPU time of one exchange, client and
// server together, in one process.
func BenchmarkUnaryServers(b *testing.B) {
	for _, lean := range []bool{false, true} {
		name := "net-http"
		if lean {
			name = "lean-http"
		}
		b.Run(name, func(b *testing.B) {
			s, _ := New(Config{PromptCounter: "approx", LeanHTTP: lean})
			url, stop, err := s.Start("")
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			b.ReportAllocs()
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := tr.RoundTrip(mustRequest(url+chatPath, benchUnaryBody))
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}

func mustRequest(url, body string) *http.Request {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// BenchmarkDecodeRequest is the decoding of a small chat request body, by encoding/json and by
// goccy/go-json (what parseRequest uses): compare the two in one run.
func BenchmarkDecodeRequest(b *testing.B) {
	body := []byte(benchUnaryBody)
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			var r request
			if err := stdjson.Unmarshal(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("goccy-go-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := parseRequest(body, chatEndpoint); err != nil {
				b.Fatal(err)
			}
		}
	})
}
