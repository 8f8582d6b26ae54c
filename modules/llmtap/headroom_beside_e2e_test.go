package llmtap_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestHeadroomProbeBesideAnotherLoad runs a headroom probe (2, 4, 6, 8 req/s, SLOs it always
// meets) beside a steady shadow load of 6 req/s through the proxy. The probe's steps count its
// own requests only: no more than it sent, and a headroom no higher than its last step allows
// (counting the other load's requests gave 10.12 req/s from a probe whose top step is 8). Its
// state is the same in the report (JSON and text) and the load's status.
func TestHeadroomProbeBesideAnotherLoad(t *testing.T) {
	_, up := serveShadowMock(t)
	p, _ := loadShadowProxy(t, up, func(site string) string {
		return fmt.Sprintf(`	llmtap {
		guard {
			statuses off
		}
		shadow probe {
			url http://%[1]s/v1/chat/completions
			model shadow-m
			isl 16
			osl 16
			headroom {
				start 2
				step 2
				max 8
				step_duration 1s
				slo time_to_first_token:5000
				attainment 0.5
			}
		}
		shadow steady {
			url http://%[1]s/v1/chat/completions
			model shadow-m
			isl 16
			osl 16
			rate 6
		}
	}`, site)
	})
	var h headroomReport
	waitUntil(t, 30*time.Second, "the headroom probe to finish", func() bool {
		if err := json.Unmarshal(p.adminGet(t, "/llmtap/shadow/probe/headroom"), &h); err != nil {
			t.Fatal(err)
		}
		return h.State == "done"
	})
	var probe, steady shadowLoad
	for _, l := range p.shadowStatus(t).Shadows {
		switch l.Name {
		case "probe":
			probe = l
		case "steady":
			steady = l
		}
	}
	if steady.Sent < 10 {
		t.Fatalf("the steady load sent %d requests beside the probe: the test shows nothing", steady.Sent)
	}
	var counted int64
	for _, s := range h.Steps {
		counted += s.Shadow.Requests
		if s.Verdict != "pass" {
			t.Errorf("step at %v req/s: %q, want pass (the SLO is 5 s)", s.Rate, s.Verdict)
		}
	}
	if counted > probe.Sent {
		t.Errorf("the probe's steps counted %d shadow requests, but it sent %d: another load's requests were counted", counted, probe.Sent)
	}
	// Requests are judged by when they started; the last step asked 8 req/s for 1 s.
	if h.LastPassingRate != 8 || h.HeadroomRequestsPerSec > 8*1.25 {
		t.Errorf("headroom %.2f req/s at the step of %v req/s: want the probe's own rate, at most about 8 req/s", h.HeadroomRequestsPerSec, h.LastPassingRate)
	}
	table := string(p.adminGet(t, "/llmtap/shadow/probe/headroom?format=text"))
	if probe.State != "done" || !strings.Contains(table, "headroom probe (done)") {
		t.Errorf("state: report %q, load %q, text view:\n%s", h.State, probe.State, table)
	}
}
