package tap_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// TestAccuracyAgainstGroundTruth measures many concurrent streams from the mock server with
// the engine, reading each response as a client would, and compares every figure with the
// mock's ground truth (the time it took just before writing each event) and with the reads
// that delivered them.
//
// All times are this process's monotonic clock, and the test hands the engine each read with
// the time it returned, so the checks are exact whatever the load:
//
//   - every content event's time must be the time of the read that delivered its last byte
//     (the blank line that ends it): an off-by-one in framing or classification, an event
//     timed by its first byte or by a neighbour, a gap lost or counted twice all differ;
//   - hence no event is stamped before the mock wrote it (checked too, on its own);
//   - TTFT, request latency and ITL are the first and last of those times and their slope.
//
// How far behind the mock the reads were (the loopback delivery delay, tens of microseconds
// on an idle machine; the scheduler's on a busy one) is logged, not asserted.
func TestAccuracyAgainstGroundTruth(t *testing.T) {
	const streams, tokens = 64, 32
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.JitterCV = 20*time.Millisecond, 5*time.Millisecond, 0.3
	cfg.LogEvents = true
	srv, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := srv.Start("")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	tp := tap.New(tap.Options{})
	defer tp.Close(context.Background())
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams}}
	defer client.CloseIdleConnections()

	type measured struct {
		t0   time.Time
		rec  *record.Record
		ends []time.Time // per event, when the read that delivered its end returned
	}
	results := make([]measured, streams)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			usage := i%2 == 0 // half the streams make llmtap count tokens itself
			body := fmt.Sprintf(`{"model":"m","stream":true,"max_tokens":%d,"stream_options":{"include_usage":%v},"messages":[{"role":"user","content":"hi"}]}`, tokens, usage)
			req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", bytes.NewReader([]byte(body)))
			req.Header.Set("X-Request-Id", "acc-"+strconv.Itoa(i))
			t0 := time.Now()
			m := tp.Begin(t0, req.URL.Path)
			m.Record().RequestID = "acc-" + strconv.Itoa(i)
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				tp.End(m, time.Now(), record.ErrUpstream, err.Error())
				return
			}
			m.Headers(resp.StatusCode, resp.Header, time.Now())
			buf := make([]byte, 32<<10)
			var tail byte // the last byte of the previous read
			for {
				n, err := resp.Body.Read(buf)
				if n > 0 {
					at := time.Now()
					m.Write(buf[:n], at)
					// The events this read completed: each "\n\n", one may straddle reads.
					prev := tail
					for _, b := range buf[:n] {
						if b == '\n' && prev == '\n' {
							results[i].ends = append(results[i].ends, at)
						}
						prev = b
					}
					tail = buf[n-1]
				}
				if err != nil {
					break
				}
			}
			resp.Body.Close()
			m.RequestBody([]byte(body), false)
			results[i].t0, results[i].rec = t0, tp.End(m, time.Now(), "", "")
		}()
	}
	wg.Wait()
	tp.Flush()

	var delays []float64
	for i, res := range results {
		if res.rec == nil {
			t.Fatalf("stream %d did not complete", i)
		}
		r := res.rec
		truth, ok := srv.TraceByID(r.RequestID)
		if !ok {
			t.Fatalf("no ground truth for %s", r.RequestID)
		}
		var written, delivered []time.Time // per content event
		k := 0                             // events of the body
		for _, ev := range truth.Events {
			if ev.Kind == mock.KindHeaders {
				continue
			}
			if (ev.Kind == mock.KindContent || ev.Kind == mock.KindReasoning) && k < len(res.ends) {
				written = append(written, ev.At)
				delivered = append(delivered, res.ends[k])
			}
			k++
		}
		if len(res.ends) != k {
			t.Fatalf("%s: the client read %d events, the mock wrote %d", r.RequestID, len(res.ends), k)
		}
		if r.ContentEvents != len(written) || r.OutputTokens != tokens || r.Error != "" || r.ITLMs == nil {
			t.Fatalf("%s: %d content events, %d output tokens (%s), error %q, itl %v; truth has %d events of %d tokens",
				r.RequestID, r.ContentEvents, r.OutputTokens, r.OutputTokensSource, r.Error, r.ITLMs, len(written), tokens)
		}
		// Engine times as offsets from t0, rebuilt from the record.
		engine := []float64{*r.TTFTMs}
		for _, g := range r.InterChunkMs {
			engine = append(engine, engine[len(engine)-1]+g)
		}
		for k := range written {
			want := record.Ms(delivered[k].Sub(res.t0))
			if d := engine[k] - record.Ms(written[k].Sub(res.t0)); d < -1e-6 {
				t.Fatalf("%s event %d stamped %.3f ms BEFORE the mock wrote it: events are misattributed", r.RequestID, k, -d)
			}
			if d := engine[k] - want; d > 1e-6 || d < -1e-6 {
				t.Fatalf("%s event %d at %.6f ms, but the read that delivered it returned at %.6f ms: events are misattributed", r.RequestID, k, engine[k], want)
			}
			delays = append(delays, record.Ms(delivered[k].Sub(written[k])))
		}
		last := engine[len(engine)-1]
		if got := *r.RequestLatencyMs - last; got > 1e-6 || got < -1e-6 {
			t.Fatalf("%s: request latency %.6f is not the last content event %.6f", r.RequestID, *r.RequestLatencyMs, last)
		}
		if itl := (last - engine[0]) / float64(tokens-1); *r.ITLMs-itl > 1e-6 || *r.ITLMs-itl < -1e-6 {
			t.Fatalf("%s: itl %.6f ms, want (last - first content event)/(tokens - 1) = %.6f", r.RequestID, *r.ITLMs, itl)
		}
	}
	slices.Sort(delays)
	t.Logf("%d streams × %d events, each timed by the read that delivered it; delivery behind the mock's write: median %.3f ms, p99 %.3f ms, max %.3f ms",
		streams, tokens, delays[len(delays)/2], delays[len(delays)*99/100], delays[len(delays)-1])
}
