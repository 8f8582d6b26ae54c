package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/internal/sample"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
)

// arrival is one request as the server received it: its id, session header and body.
type arrival struct {
	id, session string
	body        []byte
}

// serverLog is what a mock behind a logging handler received, in arrival order.
type serverLog struct {
	mu sync.Mutex
	in []arrival
}

func (l *serverLog) all() []arrival {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.in)
}

// startLoggedMock serves a mock (with its event log on) behind a handler that logs every
// request's X-Request-Id, X-Correlation-Id (the session header llmtap replay and AIPerf send)
// and body before the mock sees it.
func startLoggedMock(t *testing.T, cfg mock.Config) (*mock.Server, string, *serverLog) {
	t.Helper()
	cfg.LogEvents = true
	mock, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mock.Close() })
	log := &serverLog{}
	addr := testkit.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		log.mu.Lock()
		log.in = append(log.in, arrival{id: r.Header.Get("X-Request-Id"), session: r.Header.Get("X-Correlation-Id"), body: b})
		log.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		mock.ServeHTTP(w, r)
	}))
	return mock, "http://" + addr, log
}

// sessionTrace writes a Mooncake trace of n sessions of turns turns each, session k starting
// at k*step, its turns 1 ms apart in the trace (their delay 1 ms), and n requests without a
// session at k*step+step/2. It returns the file's path.
func sessionTrace(t *testing.T, n, turns int, step time.Duration) string {
	t.Helper()
	var b strings.Builder
	for k := range n {
		at := time.Duration(k) * step
		for j := range turns {
			fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 20, "output_length": 2, "hash_ids": [%d], "session_id": "s%d", "delay": 1}`+"\n",
				(at + time.Duration(j)*time.Millisecond).Milliseconds(), k, k)
		}
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 20, "output_length": 2, "hash_ids": [%d]}`+"\n", (at + step/2).Milliseconds(), 1000+k)
	}
	path := filepath.Join(t.TempDir(), "sessions.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// perSession counts the arrivals of each session header ("" for requests without one).
func perSession(in []arrival) map[string]int {
	n := map[string]int{}
	for _, a := range in {
		n[a.session]++
	}
	return n
}

// TestReplaySessionSample replays 40 three-turn sessions and 40 single requests with
// --trace-session-sample-ratio 0.5: at the server every session arrives whole or not at all,
// and the sessions that arrive are exactly those the seeded coin keeps.
func TestReplaySessionSample(t *testing.T) {
	_, url, log := startLoggedMock(t, fastMock())
	path := sessionTrace(t, 40, 3, 5*time.Millisecond)
	code, out, _ := runReplayArgs(t, "--url", url, "--model", "m", "--artifact-dir", t.TempDir(),
		"--trace-session-sample-ratio", "0.5", "--random-seed", "7", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	got := perSession(log.all())
	coin := sample.New(0.5, 7)
	kept := 0
	for k := range 40 {
		sid := fmt.Sprintf("s%d", k)
		want := 0
		if coin.Keep(sid) {
			want, kept = 3, kept+1
		}
		if got[sid] != want {
			t.Errorf("session %s: %d turns arrived, want %d", sid, got[sid], want)
		}
	}
	if kept == 0 || kept == 40 {
		t.Fatalf("the coin kept %d of 40 sessions: the test shows nothing", kept)
	}
	if n := got[""]; n == 0 || n == 40 {
		t.Errorf("%d of 40 requests without a session arrived, want a sample", n)
	}
	delete(got, "")
	if len(got) != kept {
		t.Errorf("%d sessions arrived, want %d: %v", len(got), kept, got)
	}
}

// TestReplayScheduleSlice replays the slice 101–300 ms of a trace whose sessions start every
// 100 ms with their turns 1 ms apart, and with a request without a session 50 ms after each:
// at the server, the sessions whose first turn is in the slice arrive whole (the one at 300
// too, though its later turns are after the end), the one at 100 not at all (though its later
// turns are in the slice), with the sessionless requests at 150 and 250. The schedule starts
// at the start offset, so the first request (150 ms) is released 49 ms in.
func TestReplayScheduleSlice(t *testing.T) {
	_, url, log := startLoggedMock(t, fastMock())
	path := sessionTrace(t, 5, 3, 100*time.Millisecond)
	code, out, res := runReplayArgs(t, "--url", url, "--model", "m", "--artifact-dir", t.TempDir(),
		"--fixed-schedule-start-offset", "101", "--fixed-schedule-end-offset", "300", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	got := perSession(log.all())
	want := map[string]int{"s2": 3, "s3": 3, "": 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("arrived per session %v, want %v", got, want)
	}
	first := time.Duration(1 << 62)
	for _, s := range res.Sent {
		first = min(first, s.Start)
	}
	if first < 49*time.Millisecond {
		t.Errorf("the first request was released %v into the run, want ≥ 49 ms (the trace's 150 ms − the start offset 101 ms)", first)
	}
	for _, bad := range [][]string{
		{"--fixed-schedule-start-offset", "300", "--fixed-schedule-end-offset", "200"},
		{"--fixed-schedule-start-offset", "10", "--fixed-schedule-auto-offset"},
		{"--fixed-schedule-start-offset", "-1"},
		{"--trace-session-sample-ratio", "0"},
	} {
		if code, _, _ := runReplayArgs(t, append(append([]string{"--url", url, "--model", "m"}, bad...), path)...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (a usage error)", bad, code)
		}
	}
}

// sessionsCaddyfile is surfacesCaddyfile recording the payloads too, with the session id taken
// from X-Correlation-Id.
var sessionsCaddyfile = strings.Replace(surfacesCaddyfile, "flush_interval 100ms",
	"files records trace payloads\n\t\t\tsession_header X-Correlation-Id\n\t\t\tflush_interval 100ms", 1)

// TestSessionsRoundTrip records two three-turn chat sessions through real Caddy with llmtap in
// front of the mock, each client waiting a known think time after a response before its next
// turn (each turn's body holding the whole conversation, as chat clients send it), then replays
// the recorded payload file against a mock whose responses take much longer. The recording
// holds each later turn's think time, at least what the client waited. At the server, each
// recorded body arrives exactly once, each session's turns in order, and the gap from the end
// of a turn's response to the next turn's arrival is at least the recorded delay (causal: the
// replay waits for the response, then the delay) and at most a generous second more. A replay
// on the recorded timestamps alone would send a turn before the slower previous response ended.
func TestSessionsRoundTrip(t *testing.T) {
	fast := fastMock()
	fast.ITL = time.Millisecond
	_, upstream := testkit.StartMock(t, fast)
	dir := filepath.Join(t.TempDir(), "rec")
	site := testkit.FreeAddr(t)
	stop := startStoppable(t, "sessions.Caddyfile", fmt.Sprintf(sessionsCaddyfile, testkit.FreeAddr(t), "", site, dir, strings.TrimPrefix(upstream, "http://")))

	ms := time.Millisecond
	think := map[string][]time.Duration{"chat-a": {150 * ms, 250 * ms}, "chat-b": {200 * ms, 100 * ms}}
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	for sid, waits := range think {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- chatSession(context.Background(), "http://"+site+"/v1/chat/completions", sid, waits)
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	stop() // flushes the recorder

	files, _ := filepath.Glob(filepath.Join(dir, "payloads-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("payload files %v, want one", files)
	}
	recorded, _, err := trace.ReadSorted(files[0], trace.Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	turns := map[string][]trace.Request{}
	for _, q := range recorded {
		turns[q.SessionID] = append(turns[q.SessionID], q)
	}
	var over time.Duration // the most a recorded delay exceeds the client's wait
	for sid, waits := range think {
		ts := turns[sid]
		if len(ts) != 3 {
			t.Fatalf("session %s: %d turns recorded, want 3", sid, len(ts))
		}
		for k, w := range waits {
			if d := ts[k+1].Delay; d < w || d > w+time.Second {
				t.Errorf("session %s turn %d: recorded delay %v, want at least the %v the client waited (and under a second more)", sid, k+2, d, w)
			}
			over = max(over, ts[k+1].Delay-w)
		}
	}

	slow := fastMock()
	slow.TTFT = 300 * ms // far longer than the recorded responses (a few ms)
	mock, url, log := startLoggedMock(t, slow)
	code, out, _ := runReplayArgs(t, "--url", url, "--artifact-dir", t.TempDir(), "--compare-to", dir, files[0])
	if code != 0 {
		t.Fatalf("replay exit %d\n%s", code, out)
	}
	// Four think times bound nothing, but the verdict compares them: both sides hold sessions.
	if !strings.Contains(out, "think_time_ms p50") || strings.Contains(out, "not compared: session think time") {
		t.Errorf("the fidelity verdict did not compare think times:\n%s", out)
	}
	in := log.all()
	if len(in) != len(recorded) {
		t.Fatalf("%d requests arrived, want the %d recorded", len(in), len(recorded))
	}
	bySession := map[string][]arrival{}
	for _, a := range in {
		bySession[a.session] = append(bySession[a.session], a)
	}
	var worst time.Duration
	for sid, rec := range turns {
		got := bySession[sid]
		if len(got) != len(rec) {
			t.Errorf("session %s: %d turns arrived, want %d", sid, len(got), len(rec))
			continue
		}
		for k := range rec {
			if !bytes.Equal(got[k].body, rec[k].Payload) {
				t.Errorf("session %s: arrival %d is not turn %d's recorded body:\n got %s\nwant %s", sid, k+1, k+1, got[k].body, rec[k].Payload)
			}
			if k == 0 {
				continue
			}
			prev, ok1 := mock.TraceByID(got[k-1].id)
			cur, ok2 := mock.TraceByID(got[k].id)
			if !ok1 || !ok2 || len(prev.Events) == 0 {
				t.Fatalf("session %s: no mock trace of turn %d or %d", sid, k, k+1)
			}
			gap := cur.Arrived.Sub(prev.Events[len(prev.Events)-1].At)
			if gap < rec[k].Delay || gap > rec[k].Delay+time.Second {
				t.Errorf("session %s turn %d arrived %v after turn %d's response ended; recorded delay %v (want gap ≥ delay, ≤ delay + 1 s)",
					sid, k+1, gap, k, rec[k].Delay)
			}
			worst = max(worst, gap-rec[k].Delay)
		}
	}
	t.Logf("think time: recorded delay − client's wait ≤ %v; at the replay's server, gap − recorded delay ≤ %v", over, worst)
}

// chatSession sends three chat turns of session sid, each body holding the whole conversation
// so far, waiting waits[k] after turn k+1's response was read before sending the next.
func chatSession(ctx context.Context, url, sid string, waits []time.Duration) error {
	msgs := []map[string]string{{"role": "system", "content": "You are terse."}}
	for k := range len(waits) + 1 {
		msgs = append(msgs, map[string]string{"role": "user", "content": fmt.Sprintf("%s question %d", sid, k+1)})
		body, _ := json.Marshal(map[string]any{"model": "mock-model", "stream": true, "max_tokens": 4, "messages": msgs})
		req, err := testkit.NewPost(ctx, url, fmt.Sprintf("%s-%d", sid, k+1), body)
		if err != nil {
			return err
		}
		req.Header.Set("X-Correlation-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s turn %d: status %d, %v", sid, k+1, resp.StatusCode, err)
		}
		msgs = append(msgs, map[string]string{"role": "assistant", "content": fmt.Sprintf("answer %d", k+1)})
		if k < len(waits) {
			time.Sleep(waits[k])
		}
	}
	return nil
}
