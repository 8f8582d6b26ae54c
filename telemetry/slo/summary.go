package slo

import (
	"sort"
	"time"
)

// Report is the attainment of one (SLO, model), as GET /llmtap/slo returns it.
type Report struct {
	// SLO is the SLO's name and Model the model label of the requests counted.
	SLO   string `json:"slo"`
	Model string `json:"model"`
	// Target is the attainment objective; Thresholds the SLO's thresholds.
	Target     float64    `json:"target"`
	Thresholds Thresholds `json:"thresholds"`
	// Total is every request counted since the process started (counters of
	// llmtap_slo_requests_total); Windows the rolling windows, shortest first.
	Total   Window   `json:"total"`
	Windows []Window `json:"windows"`
}

// Window is the attainment of one (SLO, model) over one span of time.
type Window struct {
	// Window is the window's length ("5m0s"); empty for the total. Seconds is the time the
	// figures cover: the window, or less when the series began within it.
	Window  string  `json:"window,omitempty"`
	Seconds float64 `json:"seconds"`
	// Requests is the requests counted; Good those that met every threshold.
	Requests uint64 `json:"requests"`
	Good     uint64 `json:"good"`
	// Attainment is, per objective (ttft, itl, latency, all), the share of the requests that
	// met it; absent without requests.
	Attainment map[string]float64 `json:"attainment,omitempty"`
	// Goodput is good requests per second over Seconds (AIPerf's goodput).
	Goodput float64 `json:"goodput"`
	// BurnRate is the share of requests that missed (1 − attainment of all) divided by the
	// error budget (1 − target): 1 spends the budget exactly over the SLO period, 14.4 spends
	// 2 % of a 30-day budget in an hour. Absent without requests.
	BurnRate *float64 `json:"burn_rate,omitempty"`
}

// Reports returns the attainment of every series, sorted by SLO then model.
func (t *Tracker) Reports() []Report {
	now := t.now()
	at := now.UnixNano() / int64(bucketWidth)
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Report, 0, len(t.series))
	for _, se := range t.series {
		rep := Report{SLO: se.slo, Model: se.model, Target: se.target, Thresholds: se.thresholds}
		rep.Total = se.window(se.cum, now.Sub(se.first))
		rep.Total.Window = ""
		for _, w := range Windows {
			var c counts
			n := int64(w / bucketWidth)
			for i := range se.ring {
				if b := &se.ring[i]; b.at > at-n && b.at <= at {
					c.add(&b.counts)
				}
			}
			span := min(w, now.Sub(se.first))
			win := se.window(c, span)
			win.Window = w.String()
			rep.Windows = append(rep.Windows, win)
		}
		out = append(out, rep)
	}
	// An SLO declared by a loaded config that no request matched yet is listed, with no
	// requests and model "" (which models it will count is not known until they come).
	seen := make(map[string]bool, len(out))
	for _, r := range out {
		seen[r.SLO] = true
	}
	for name, c := range t.declared {
		if seen[name] {
			continue
		}
		rep := Report{SLO: name, Target: c.target, Thresholds: c.settled}
		for _, w := range Windows {
			rep.Windows = append(rep.Windows, Window{Window: w.String()})
		}
		out = append(out, rep)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].SLO != out[j].SLO {
			return out[i].SLO < out[j].SLO
		}
		return out[i].Model < out[j].Model
	})
	return out
}

// window computes a Window's figures from its counts over span.
func (se *series) window(c counts, span time.Duration) Window {
	w := Window{Seconds: span.Seconds(), Requests: c.total, Good: c.met[3]}
	if w.Seconds > 0 {
		w.Goodput = float64(w.Good) / w.Seconds
	}
	if c.total == 0 {
		return w
	}
	w.Attainment = map[string]float64{}
	for _, obj := range se.objs {
		w.Attainment[obj] = float64(c.met[objIndex(obj)]) / float64(c.total)
	}
	burn := (1 - w.Attainment[ObjAll]) / (1 - se.target)
	w.BurnRate = &burn
	return w
}
