package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmtap/llmtap/api"
	"github.com/llmtap/llmtap/export/prom"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/recorder"
)

// recordings answers RecordingStatus with one configured recorder.
type recordings struct{ r *recorder.Recorder }

func (recordings) Start(context.Context, *llmtapv1.RecordingStartRequest) (*llmtapv1.Recording, error) {
	return nil, api.ErrState
}
func (recordings) Stop(context.Context) (*llmtapv1.Recording, error) { return nil, api.ErrState }
func (s recordings) Status(context.Context) ([]*llmtapv1.Recording, error) {
	return []*llmtapv1.Recording{api.RecordingProto(s.r, "config", time.Time{})}, nil
}

// sessionsMetric reads llmtap_recorder_sessions_total{outcome} from a /metrics page served
// over HTTP.
func sessionsMetric(t *testing.T, url, outcome string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	prefix := fmt.Sprintf("llmtap_recorder_sessions_total{outcome=%q} ", outcome)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	t.Fatalf("no %s in\n%s", prefix, b)
	return 0
}

// TestRecordingSessionCounters forces a recorder's session table to overflow (room for one
// session, three sessions recorded) and a remembered session to expire (idle 1 ms, its turn
// long over), and reads both counters where the recorder's other counters are: Connect's
// RecordingStatus, and /metrics (llmtap_recorder_sessions_total, the process's count).
func TestRecordingSessionCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.RecorderSessions())
	metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(metrics.Close)
	untracked0, expired0 := sessionsMetric(t, metrics.URL, "untracked"), sessionsMetric(t, metrics.URL, "expired")

	r, err := recorder.New(recorder.Options{Dir: filepath.Join(t.TempDir(), "rec"), Trace: true,
		MaxSessions: 1, SessionIdle: time.Millisecond, FlushEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	start := time.Now().Add(-time.Hour)
	for i, sid := range []string{"a", "b", "c"} {
		r.Submit(&record.Record{RequestID: fmt.Sprint("req-", i), SessionID: sid, Class: record.ClassLive, Model: "m",
			Path: "/v1/chat/completions", API: "openai.chat", Status: 200, Start: start.Add(time.Duration(i) * time.Millisecond),
			DurationMs: 1, RequestBody: []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)}, nil)
	}
	c := serve(t, api.Options{Host: fakeHost{recording: recordings{r}}.serve()})
	var got *llmtapv1.Recording
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		res, err := c.RecordingStatus(t.Context(), connect.NewRequest(&llmtapv1.RecordingStatusRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		if got = res.Msg.Recordings[0]; got.SessionsUntracked == 2 && got.SessionsExpired == 1 {
			break
		}
	}
	if got.SessionsUntracked != 2 || got.SessionsExpired != 1 {
		t.Errorf("RecordingStatus: sessions_untracked %d, sessions_expired %d; want 2 (b, c: no room) and 1 (a, idle)",
			got.SessionsUntracked, got.SessionsExpired)
	}
	if u, e := sessionsMetric(t, metrics.URL, "untracked")-untracked0, sessionsMetric(t, metrics.URL, "expired")-expired0; u != 2 || e != 1 {
		t.Errorf("/metrics llmtap_recorder_sessions_total rose by untracked %d, expired %d; want 2 and 1", u, e)
	}
}
