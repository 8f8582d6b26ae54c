package shadow

import (
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

func rec(class string, start time.Time, ttftMs float64) *record.Record {
	v := ttftMs
	return &record.Record{Class: class, Start: start, Status: 200, TTFTMs: &v, OutputTokens: 10}
}

// own makes rec one of p's own requests, by its request id (a shadow record without it is
// another load's).
func own(p *probe, rec *record.Record) *record.Record {
	rec.RequestID = p.requestID(1)
	return rec
}

func TestProbeSteps(t *testing.T) {
	// On a fake clock: steps of 1 s at 2, 4, 6 req/s (max 8), SLO TTFT ≤ 100 ms for 90 %.
	// Step 1 and 2 are fast, step 3's shadow requests are slow: the probe stops there and the
	// headroom is step 2's.
	slos, _ := stats.ParseSLOs("time_to_first_token:100")
	p := newProbe(HeadroomConfig{Start: 2, Step: 2, Max: 8, StepDuration: time.Second, SLOs: slos, Attainment: 0.9, MinLive: 2})
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	want := func(now time.Duration, rate float64, finished bool) {
		t.Helper()
		r, f := p.rate(at(now))
		if r != rate || f != finished {
			t.Fatalf("at %v: rate %v finished %v, want %v %v", now, r, f, rate, finished)
		}
	}
	want(0, 2, false)
	for i := range 2 {
		p.observe(own(p, rec(record.ClassShadow, at(time.Duration(i)*400*time.Millisecond), 30)))
		p.observe(rec(record.ClassLive, at(time.Duration(i)*400*time.Millisecond), 30))
	}
	want(999*time.Millisecond, 2, false)
	want(time.Second, 4, false) // step 2 starts; step 1 judged half a step later
	for i := range 4 {
		p.observe(own(p, rec(record.ClassShadow, at(time.Second+time.Duration(i)*200*time.Millisecond), 60)))
	}
	want(1500*time.Millisecond, 4, false)
	if h := p.report(at(1500 * time.Millisecond)); h.Steps[0].Verdict != "pass" || h.LastPassingRate != 2 {
		t.Fatalf("step 1 after its grace: %+v", h)
	}
	want(2*time.Second, 6, false)
	for i := range 6 {
		p.observe(own(p, rec(record.ClassShadow, at(2*time.Second+time.Duration(i)*150*time.Millisecond), 300)))
	}
	// A record that started in step 3 but arrives after step 3 was judged is ignored.
	want(3*time.Second, 8, false)
	want(3500*time.Millisecond, 0, true)
	p.observe(own(p, rec(record.ClassShadow, at(2900*time.Millisecond), 300)))
	h := p.report(at(4 * time.Second))
	if h.State != "done" || len(h.Steps) != 4 || h.LastPassingRate != 4 || h.HeadroomRequestsPerSec != 4 || h.HeadroomOutputTokensPerSec != 40 {
		t.Fatalf("report %+v", h)
	}
	if s := h.Steps[2]; s.Verdict != "fail" || s.Shadow.Requests != 6 || s.Shadow.Attainment != 0 || !strings.Contains(s.Reason, "shadow requests met the SLO 0.0%") {
		t.Fatalf("step 3: %+v", s)
	}
	if h.Steps[3].Verdict != "stopped" || !strings.Contains(h.Verdict, "step at 6 req/s failed") {
		t.Fatalf("after the failing step: %+v, verdict %q", h.Steps[3], h.Verdict)
	}
	tab := h.Table()
	if !strings.Contains(tab, "headroom: 4.00 req/s, 40 output tokens/s") {
		t.Fatalf("table:\n%s", tab)
	}
	// A class without requests in a step has no attainment: "-", not 100 % (issue 34).
	for i, line := range strings.Split(tab, "\n")[2:6] {
		f := strings.Fields(line)
		if s := h.Steps[i]; len(f) < 8 || (s.Live.Requests == 0) != (f[6] == "-") || (s.Shadow.Requests == 0) != (f[3] == "-") {
			t.Errorf("step %d (live n %d, shadow n %d) reads %q", i+1, s.Live.Requests, s.Shadow.Requests, line)
		}
	}
	if !strings.Contains(tab, "-") || h.Steps[3].Live.Requests != 0 {
		t.Errorf("no step without live requests in\n%s", tab)
	}
}

func TestProbeLiveBreaksAndGuard(t *testing.T) {
	slos, _ := stats.ParseSLOs("time_to_first_token:100")
	t0 := time.Unix(1000, 0)
	// Live requests breaking the SLO fail the step even when the shadow ones are fine.
	p := newProbe(HeadroomConfig{Start: 1, Step: 1, Max: 3, StepDuration: time.Second, SLOs: slos, Attainment: 0.9, MinLive: 2})
	p.rate(t0)
	p.observe(own(p, rec(record.ClassShadow, t0, 10)))
	p.observe(rec(record.ClassLive, t0, 500))
	p.observe(rec(record.ClassLive, t0, 500))
	p.rate(t0.Add(time.Second))
	if _, f := p.rate(t0.Add(1500 * time.Millisecond)); !f {
		t.Fatal("slow live requests did not fail the step")
	}
	if h := p.report(t0.Add(2 * time.Second)); !strings.Contains(h.Steps[0].Reason, "live requests") || h.HeadroomRequestsPerSec != 0 {
		t.Fatalf("report %+v", h)
	}
	// The guard rails tripping fails the running step at once.
	p = newProbe(HeadroomConfig{Start: 1, Step: 1, Max: 3, StepDuration: time.Second, SLOs: slos, Attainment: 0.9, MinLive: 2})
	p.rate(t0)
	p.guardTripped("live_ttft_p99 900ms > 500ms")
	if _, f := p.rate(t0.Add(100 * time.Millisecond)); !f {
		t.Fatal("the probe went on after the guard rails tripped")
	}
	if h := p.report(t0); !strings.Contains(h.Verdict, "guard rails: live_ttft_p99") {
		t.Fatalf("verdict %q", h.Verdict)
	}
}

func TestProbeGuardTripsInTheGraceOfAFailingStep(t *testing.T) {
	// Step 1 ended with slow shadow requests and waits for its grace period to be judged when
	// the guard rails trip in step 2: both fail, and the verdict names step 1, the first.
	slos, _ := stats.ParseSLOs("time_to_first_token:100")
	p := newProbe(HeadroomConfig{Start: 1, Step: 1, Max: 3, StepDuration: time.Second, SLOs: slos, Attainment: 0.9, MinLive: 2})
	t0 := time.Now()
	p.rate(t0)
	p.observe(own(p, rec(record.ClassShadow, t0, 500)))
	if r, _ := p.rate(t0.Add(time.Second)); r != 2 {
		t.Fatalf("rate %v after the first step, want 2", r)
	}
	p.guardTripped("live_ttft_p99 900ms > 500ms")
	h := p.report(t0.Add(1200 * time.Millisecond))
	if len(h.Steps) != 2 || h.Steps[0].Verdict != "fail" || !strings.Contains(h.Steps[0].Reason, "shadow requests met the SLO 0.0%") ||
		h.Steps[1].Verdict != "fail" || !strings.Contains(h.Steps[1].Reason, "guard rails") {
		t.Fatalf("steps %+v", h.Steps)
	}
	if !strings.HasPrefix(h.Verdict, "step at 1 req/s failed: shadow requests") || h.HeadroomRequestsPerSec != 0 {
		t.Fatalf("verdict %q, headroom %v", h.Verdict, h.HeadroomRequestsPerSec)
	}
}

// TestProbeCountsOnlyItsOwnRequests runs a step with another shadow load's requests beside the
// probe's: only the probe's (by request id) are its step's shadow requests, so the headroom
// cannot exceed what the probe itself sent.
func TestProbeCountsOnlyItsOwnRequests(t *testing.T) {
	slos, _ := stats.ParseSLOs("time_to_first_token:100")
	p := newProbe(HeadroomConfig{Start: 2, Step: 2, Max: 2, StepDuration: time.Second, SLOs: slos, Attainment: 0.9, MinLive: 2})
	other := newProbe(HeadroomConfig{Start: 2, Step: 2, Max: 2, StepDuration: time.Second, SLOs: slos, Attainment: 0.9, MinLive: 2})
	t0 := time.Unix(1000, 0)
	p.rate(t0)
	for i := range 2 {
		p.observe(own(p, rec(record.ClassShadow, t0.Add(time.Duration(i)*400*time.Millisecond), 30)))
	}
	for i := range 10 { // a steady load of 10 req/s beside it, and a previous probe's requests
		p.observe(rec(record.ClassShadow, t0.Add(time.Duration(i)*100*time.Millisecond), 30))
		p.observe(own(other, rec(record.ClassShadow, t0.Add(time.Duration(i)*100*time.Millisecond), 30)))
	}
	p.observe(rec(record.ClassLive, t0, 30))
	p.rate(t0.Add(time.Second))
	if _, f := p.rate(t0.Add(1500 * time.Millisecond)); !f {
		t.Fatal("the single step did not end the probe")
	}
	h := p.report(t0.Add(2 * time.Second))
	if s := h.Steps[0]; s.Shadow.Requests != 2 || s.Live.Requests != 1 || h.HeadroomRequestsPerSec != 2 {
		t.Fatalf("step %+v, headroom %v req/s: want the probe's 2 shadow requests (2 req/s) and the live one", s, h.HeadroomRequestsPerSec)
	}
	if !strings.HasPrefix(p.requestID(7), p.id) || p.id == other.id {
		t.Fatalf("request ids %q and %q: want a prefix of each probe's own", p.requestID(7), other.requestID(7))
	}
}

// TestProbeReportIsFinal checks that an ended probe's report stops changing: a record that
// arrives later (one started in the step that was running) and a later clock change nothing,
// so the log line written at the end and every later read agree.
func TestProbeReportIsFinal(t *testing.T) {
	slos, _ := stats.ParseSLOs("time_to_first_token:100")
	for _, end := range []struct {
		name string
		do   func(p *probe, now time.Time)
	}{
		{"guard rails", func(p *probe, _ time.Time) { p.guardTripped("live_ttft_p99 900ms > 500ms") }},
		{"stop", func(p *probe, now time.Time) { p.stop(now) }},
	} {
		p := newProbe(HeadroomConfig{Start: 1, Step: 1, Max: 3, StepDuration: time.Second, SLOs: slos, Attainment: 0.9, MinLive: 2})
		t0 := time.Now()
		p.rate(t0)
		p.observe(own(p, rec(record.ClassShadow, t0, 10)))
		end.do(p, t0.Add(300*time.Millisecond))
		first := p.report(t0.Add(time.Second))
		p.observe(own(p, rec(record.ClassShadow, t0.Add(100*time.Millisecond), 10)))
		p.observe(rec(record.ClassLive, t0.Add(100*time.Millisecond), 10))
		later := p.report(t0.Add(time.Minute))
		if first.State != "done" || !reflect.DeepEqual(first, later) {
			t.Errorf("%s: the report changed after the probe ended:\n%+v\n%+v", end.name, first, later)
		}
	}
}

// TestProbeRunnerStateAgrees checks that a probe runner's state and its report's agree when
// the guard rails pause it and when it is stopped: done, both.
func TestProbeRunnerStateAgrees(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := httptest.NewServer(&counting{})
	defer srv.Close()
	slos, _ := stats.ParseSLOs("time_to_first_token:100")
	for _, end := range []struct {
		name string
		do   func(r *Runner)
	}{
		{"guard rails", func(r *Runner) { r.Pause("live_ttft_p99 900ms > 500ms") }},
		{"stop", func(r *Runner) { r.Stop() }},
	} {
		logged := make(chan HeadroomReport, 1)
		r, err := New(Config{
			Name: "probe", MaxRate: 50, Source: &Source{URL: srv.URL, Bodies: [][]byte{[]byte(`{}`)}},
			Headroom:   &HeadroomConfig{Start: 10, Step: 10, Max: 30, StepDuration: time.Minute, SLOs: slos, Attainment: 0.9, MinLive: 2},
			OnHeadroom: func(h HeadroomReport) { logged <- h }, // what the proxy logs
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a request of the probe", 5*time.Second, func() bool { return r.Status().Sent > 0 })
		end.do(r)
		st := r.Status()
		if st.State != StateDone || st.Headroom == nil || st.Headroom.State != "done" || !strings.Contains(st.Headroom.Table(), "headroom probe (done)") {
			t.Errorf("%s: runner %q, report %q: want done, both", end.name, st.State, st.Headroom.State)
		}
		select {
		case h := <-logged:
			if later := r.Status().Headroom; !reflect.DeepEqual(h, *later) {
				t.Errorf("%s: the report logged at the end differs from the one served later:\n%+v\n%+v", end.name, h, *later)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: the end of the probe was never reported (logged)", end.name)
		}
		if err := r.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}
