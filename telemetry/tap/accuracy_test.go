package tap_test

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/llmtap/llmtap/shadow/mockllm"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// TestAccuracyAgainstGroundTruth measures many concurrent streams from the mock server with
// the engine, reading each response as a client would, and compares every figure with the
// mock's ground truth: the time it took just before writing each event.
//
// Both clocks are this process's monotonic clock, so the comparison is exact up to delivery:
// the engine stamps an event when a Read returns it, which is after the mock's Write began.
// Hence:
//
//   - every event's error (engine time − ground truth) must be ≥ 0: a negative error means an
//     event was stamped with the time of an earlier read — an off-by-one in framing or
//     classification — and no amount of noise can produce it;
//   - the median error is the loopback delivery delay, tens of microseconds on an idle
//     machine; we allow 2 ms because the test shares two cores with 64 streams, the mock and
//     the race detector;
//   - ITL is a difference of two stamps divided by (tokens − 1), so delivery delays mostly
//     cancel: it must agree within 0.5 ms for the median stream.
//
// The p99 of the per-event error is reported, not asserted: it measures the scheduler.
func TestAccuracyAgainstGroundTruth(t *testing.T) {
	const streams, tokens = 64, 32
	cfg := mockllm.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.JitterCV = 20*time.Millisecond, 5*time.Millisecond, 0.3
	cfg.LogEvents = true
	mock, err := mockllm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := mock.Start("")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	tp := tap.New(tap.Options{})
	defer tp.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams}}
	defer client.CloseIdleConnections()

	type measured struct {
		t0     time.Time
		rec    *record.Record
		events []time.Time // when each read carrying bytes returned
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
			for {
				n, err := resp.Body.Read(buf)
				if n > 0 {
					m.Write(buf[:n], time.Now())
				}
				if err != nil {
					break
				}
			}
			resp.Body.Close()
			m.RequestBody([]byte(body), false)
			results[i] = measured{t0: t0, rec: tp.End(m, time.Now(), "", "")}
		}()
	}
	wg.Wait()
	tp.Flush()

	var eventErrs, itlErrs, lateness []float64
	for i, res := range results {
		if res.rec == nil {
			t.Fatalf("stream %d did not complete", i)
		}
		r := res.rec
		truth, ok := mock.TraceByID(r.RequestID)
		if !ok {
			t.Fatalf("no ground truth for %s", r.RequestID)
		}
		var content []time.Time
		for _, ev := range truth.Events {
			if ev.Kind == mockllm.KindContent || ev.Kind == mockllm.KindReasoning {
				content = append(content, ev.At)
				lateness = append(lateness, record.Ms(ev.At.Sub(ev.Intended)))
			}
		}
		if r.ContentEvents != len(content) || r.OutputTokens != tokens || r.Error != "" {
			t.Fatalf("%s: %d content events, %d output tokens (%s), error %q; truth has %d events of %d tokens",
				r.RequestID, r.ContentEvents, r.OutputTokens, r.OutputTokensSource, r.Error, len(content), tokens)
		}
		// Engine times as offsets from t0, rebuilt from the record.
		engine := []float64{*r.TTFTMs}
		for _, g := range r.InterChunkMs {
			engine = append(engine, engine[len(engine)-1]+g)
		}
		for k, at := range content {
			e := engine[k] - record.Ms(at.Sub(res.t0))
			if e < -1e-6 {
				t.Fatalf("%s event %d stamped %.3f ms BEFORE the mock wrote it: events are misattributed", r.RequestID, k, -e)
			}
			eventErrs = append(eventErrs, e)
		}
		if got := *r.RequestLatencyMs - engine[len(engine)-1]; got > 1e-6 || got < -1e-6 {
			t.Fatalf("%s: request latency %.6f is not the last content event %.6f", r.RequestID, *r.RequestLatencyMs, engine[len(engine)-1])
		}
		truthITL := record.Ms(content[len(content)-1].Sub(content[0])) / float64(tokens-1)
		itlErrs = append(itlErrs, *r.ITLMs-truthITL)
	}
	slices.Sort(eventErrs)
	slices.Sort(itlErrs)
	med := eventErrs[len(eventErrs)/2]
	p99 := eventErrs[len(eventErrs)*99/100]
	itlMed := itlErrs[len(itlErrs)/2]
	t.Logf("%d streams × %d events: per-event error median %.3f ms, p99 %.3f ms, max %.3f ms; ITL error median %.4f ms",
		streams, tokens, med, p99, eventErrs[len(eventErrs)-1], itlMed)
	// The delivery bound only means something when the machine kept up: if the mock itself
	// wrote late (its own median lateness over 1 ms), the scheduler is the bottleneck and a
	// delivery delay measures it, not llmtap. The causality and ITL checks always run.
	if mockLate := median(lateness); mockLate > 1 {
		t.Logf("machine overloaded (mock's own median lateness %.3f ms): delivery bound not checked", mockLate)
	} else if med > 2 {
		t.Errorf("median per-event error %.3f ms, want ≤ 2 ms", med)
	}
	if itlMed > 0.5 || itlMed < -0.5 {
		t.Errorf("median ITL error %.4f ms, want within ±0.5 ms", itlMed)
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
