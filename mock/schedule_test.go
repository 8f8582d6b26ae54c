package mock

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStreamFollowsSchedule checks the ground truth of a real stream
// against the intended schedule. The intended times are exact (start +
// TTFT + i*ITL); actual write times can only be late, never early, since
// the writer sleeps to each deadline. The only loose check is the mean
// gap, within 50% of ITL, which an absolute schedule keeps even on a
// loaded machine (lateness does not accumulate).
func TestStreamFollowsSchedule(t *testing.T) {
	const ttft, itl, n = 20 * time.Millisecond, 5 * time.Millisecond, 40
	s, url := newTestServer(t, Config{TTFT: ttft, ITL: itl, LogEvents: true, RoleChunk: true})
	_, body := post(t, url, chatPath, `{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":40}`, "X-Request-Id", "sched")
	if got := summarize(t, body).contentEv; got != n {
		t.Fatalf("%d content events, want %d", got, n)
	}
	tr, _ := s.TraceByID("sched")
	var content []EventTime
	for _, e := range tr.Events {
		if e.At.Before(e.Intended) {
			t.Errorf("%s event written %v before its intended time", e.Kind, e.Intended.Sub(e.At))
		}
		if e.Kind == KindContent {
			content = append(content, e)
		}
	}
	if len(content) != n {
		t.Fatalf("%d content events in the trace, want %d", len(content), n)
	}
	for i, e := range content {
		if want := tr.Arrived.Add(ttft + time.Duration(i)*itl); !e.Intended.Equal(want) {
			t.Errorf("content %d intended at +%v, want +%v", i, e.Intended.Sub(tr.Arrived), want.Sub(tr.Arrived))
		}
	}
	mean := content[n-1].At.Sub(content[0].At) / (n - 1)
	if mean < itl/2 || mean > itl*3/2 {
		t.Errorf("mean gap %v, want within 50%% of ITL %v", mean, itl)
	}
	if role := tr.Events[1]; role.Kind != KindRole || !role.Intended.Equal(tr.Arrived) {
		t.Errorf("role chunk %+v is not due at arrival", role)
	}
}

// TestUnaryWaitsForLastToken checks a non-streaming body is not written
// before TTFT + (tokens-1)*ITL.
func TestUnaryWaitsForLastToken(t *testing.T) {
	const ttft, itl = 10 * time.Millisecond, 2 * time.Millisecond
	s, url := newTestServer(t, Config{TTFT: ttft, ITL: itl, LogEvents: true})
	post(t, url, chatPath, `{"messages":[{"role":"user","content":"x"}],"max_tokens":6}`, "X-Request-Id", "u")
	tr, _ := s.TraceByID("u")
	body := tr.Events[0]
	if want := tr.Arrived.Add(ttft + 5*itl); !body.Intended.Equal(want) || body.At.Before(want) {
		t.Errorf("body intended +%v written +%v, want intended and not before +%v", body.Intended.Sub(tr.Arrived), body.At.Sub(tr.Arrived), want.Sub(tr.Arrived))
	}
}

// TestCancelStopsWriter cancels a long stream after its first content
// event and checks the handler stops early, is counted, and leaves no
// goroutine behind (TestMain runs goleak).
func TestCancelStopsWriter(t *testing.T) {
	s, url := newTestServer(t, Config{ITL: 20 * time.Millisecond, LogEvents: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+chatPath,
		strings.NewReader(`{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":1000}`))
	req.Header.Set("X-Request-Id", "c")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	for !strings.Contains(string(buf), "content") { // read until the first content chunk
		b := make([]byte, 512)
		k, err := resp.Body.Read(b)
		if err != nil {
			t.Fatal(err)
		}
		buf = append(buf, b[:k]...)
	}
	cancel()
	resp.Body.Close()

	deadline := time.Now().Add(10 * time.Second) // 1000 tokens would take 20 s
	for s.Stats().InFlight != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	st := s.Stats()
	tr, ok := s.TraceByID("c")
	if st.InFlight != 0 || st.Canceled != 1 || !ok || !tr.Canceled || tr.CompletionTokens >= 1000 {
		t.Errorf("stats %+v trace %+v: want the writer stopped, canceled and counted", st, tr)
	}
	if n := len(tr.Events); n > 0 && tr.Events[n-1].Kind == KindDone {
		t.Error("a canceled stream recorded [DONE]")
	}
}

// TestEveryStepIsFlushed checks, with a writer that records the calls,
// that each token step reaches the client before the server sleeps: no
// content event may wait in a buffer for the next one.
func TestEveryStepIsFlushed(t *testing.T) {
	s, err := New(Config{RoleChunk: true, TokensPerChunk: 2})
	if err != nil {
		t.Fatal(err)
	}
	w := &callRecorder{h: http.Header{}}
	req := httptestRequest(`{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":7,"n":2}`)
	s.ServeHTTP(w, req)
	// Header and flush; two role chunks, flush; chunks end at steps 1, 3
	// and 5 (two writes, one per choice, then a flush); the last step, 6,
	// writes each choice's last chunk and finish chunk, then [DONE], flush.
	want := "H F WW F WW F WW F WW F WWWWW F"
	if got := strings.Join(w.calls, ""); strings.ReplaceAll(want, " ", "") != got {
		t.Errorf("calls %s, want %s (W write, F flush, H header)", got, want)
	}
}

type callRecorder struct {
	h     http.Header
	calls []string
}

func (c *callRecorder) Header() http.Header { return c.h }
func (c *callRecorder) WriteHeader(int)     { c.calls = append(c.calls, "H") }
func (c *callRecorder) Write(p []byte) (int, error) {
	c.calls = append(c.calls, "W")
	return len(p), nil
}
func (c *callRecorder) Flush() { c.calls = append(c.calls, "F") }

func httptestRequest(body string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, chatPath, strings.NewReader(body))
	return r
}
