package llmtap_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
)

// limited serves at most slots requests at once; the others wait for a slot (queueing before
// the first byte, as a saturated inference server does), so its time to first token rises
// with load beyond its capacity of slots / service time.
type limited struct {
	slots chan struct{}
	h     http.Handler
}

func (l *limited) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case l.slots <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	defer func() { <-l.slots }()
	l.h.ServeHTTP(w, r)
}

// headroomReport is what GET /llmtap/shadow/<name>/headroom returns (the fields used here).
type headroomReport struct {
	State                      string  `json:"state"`
	Verdict                    string  `json:"verdict"`
	HeadroomRequestsPerSec     float64 `json:"headroom_requests_per_sec"`
	HeadroomOutputTokensPerSec float64 `json:"headroom_output_tokens_per_sec"`
	LastPassingRate            float64 `json:"last_passing_rate"`
	Steps                      []struct {
		Rate    float64 `json:"rate"`
		Verdict string  `json:"verdict"`
		Live    struct {
			Requests   int64   `json:"requests"`
			Attainment float64 `json:"attainment"`
		} `json:"live"`
		Shadow struct {
			Requests       int64   `json:"requests"`
			Attainment     float64 `json:"attainment"`
			RequestsPerSec float64 `json:"requests_per_sec"`
			TTFTMs         *struct {
				P99 float64 `json:"p99"`
			} `json:"ttft_ms"`
		} `json:"shadow"`
	} `json:"steps"`
}

func TestHeadroomProbe(t *testing.T) {
	// A server with two slots and 100 ms per request (20 ms to the first token, then 16 tokens
	// 5 ms apart) serves at most 20 requests/s; beyond that its queue, and TTFT, grow without
	// bound. Live traffic takes about 2 requests/s of it. The probe steps the shadow rate
	// 6, 12, … 30 requests/s, 1.5 s a step, and must stop at the first step whose TTFT breaks
	// the SLO (90 % within 300 ms): below the capacity left to it, ~18 requests/s, and above
	// 6 requests/s, where the two slots are mostly idle (a request waits for a slot at most
	// 100 ms unless two are queued before it).
	cfg := shadowMock()
	cfg.TTFT, cfg.ITL = 20*time.Millisecond, 5*time.Millisecond
	mock, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	up := testkit.Serve(t, &limited{slots: make(chan struct{}, 2), h: mock})
	p, _ := loadShadowProxy(t, up, func(site string) string {
		return fmt.Sprintf(`	llmtap {
		guard {
			statuses off
		}
		shadow probe {
			url http://%s/v1/chat/completions
			model shadow-m
			isl 16
			osl 16
			extra min_tokens:16
			headroom {
				start 6
				step 6
				max 30
				step_duration 1500ms
				slo time_to_first_token:300
				attainment 0.9
			}
		}
	}`, site)
	})
	c := newClient(t)
	stopLive := func() func() {
		done := make(chan struct{})
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				case <-time.After(500 * time.Millisecond):
				}
				_, _, _ = testkit.PostJSON(t.Context(), c, p.sites[0]+"/v1/chat/completions", fmt.Sprintf("live-%d", i), chatBody("live-m", 16, true, true))
			}
		}()
		return func() { close(done); <-finished }
	}()
	defer stopLive()

	var h headroomReport
	waitUntil(t, 20*time.Second, "the headroom probe to finish", func() bool {
		if err := json.Unmarshal(p.adminGet(t, "/llmtap/shadow/probe/headroom"), &h); err != nil {
			t.Fatal(err)
		}
		return h.State == "done"
	})
	table := string(p.adminGet(t, "/llmtap/shadow/probe/headroom?format=text"))
	t.Logf("\n%s", table)
	if !strings.Contains(table, "headroom:") || !strings.Contains(table, "time_to_first_token<=300") {
		t.Errorf("the text form lacks the headroom line or the SLO:\n%s", table)
	}
	if len(h.Steps) < 2 || !strings.Contains(h.Verdict, "failed") {
		t.Fatalf("the probe ended after %d steps: %q", len(h.Steps), h.Verdict)
	}
	failed := -1
	for i, s := range h.Steps {
		switch {
		case failed < 0 && s.Verdict == "fail":
			failed = i
		case failed < 0 && s.Verdict != "pass":
			t.Fatalf("step %d before the failing one is %q: %+v", i, s.Verdict, s)
		case failed >= 0 && s.Verdict != "stopped":
			t.Fatalf("step %d after the failing one is %q, want stopped", i, s.Verdict)
		}
	}
	if failed < 1 {
		t.Fatalf("failing step %d: %+v", failed, h.Steps)
	}
	last := h.Steps[failed]
	// The capacity left to the probe is ~18 requests/s: the last passing step is below it (or
	// at it: over 1.5 s the queue at exactly the capacity grows slowly), and the first failing
	// step above the idle rates.
	if h.LastPassingRate > 18 || last.Rate < 12 {
		t.Errorf("headroom %v req/s (first failing step %v req/s) against a capacity of ~18 req/s left by live traffic", h.LastPassingRate, last.Rate)
	}
	if h.HeadroomRequestsPerSec <= 0 || h.HeadroomRequestsPerSec > 1.5*h.LastPassingRate || h.HeadroomOutputTokensPerSec < 10*h.HeadroomRequestsPerSec {
		t.Errorf("headroom %.2f req/s, %.0f tokens/s at the step of %v req/s (16 tokens a request)", h.HeadroomRequestsPerSec, h.HeadroomOutputTokensPerSec, h.LastPassingRate)
	}
	if st := p.shadowStatus(t).one(t); st.State != "done" {
		t.Errorf("the finished probe is %q, want done", st.State)
	}
}
