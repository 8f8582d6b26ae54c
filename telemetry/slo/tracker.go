package slo

import (
	"sort"
	"sync"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// bucketWidth is the resolution of the rolling windows; horizon the longest window.
const (
	bucketWidth = 10 * time.Second
	horizon     = time.Hour
	nBuckets    = int(horizon / bucketWidth)
)

// Windows are the rolling windows the admin API reports: the short and long windows of the
// SRE workbook's fast-burn alert (5m, 1h) and a 1m one for a live view.
var Windows = []time.Duration{time.Minute, 5 * time.Minute, time.Hour}

// MaxSeries bounds the (SLO, model) pairs a Tracker keeps; the records of further pairs are
// counted in Dropped only.
const MaxSeries = 1024

// counts are the requests of one series met and missed, per objective in objOrder.
type counts struct {
	total uint64
	met   [4]uint64 // ttft, itl, latency, all
}

// objOrder indexes counts.met.
var objOrder = [4]string{ObjTTFT, ObjITL, ObjLatency, ObjAll}

func objIndex(obj string) int {
	for i, o := range objOrder {
		if o == obj {
			return i
		}
	}
	return -1
}

// bucket is the counts of one bucketWidth of time; at is its index (unix time / width).
type bucket struct {
	at int64
	counts
}

// series is what a Tracker keeps of one (SLO, model).
type series struct {
	slo, model string
	target     float64
	thresholds Thresholds
	objs       []string // the objectives set, then ObjAll
	first      time.Time
	cum        counts
	ring       [nBuckets]bucket
}

type key struct{ slo, model string }

// Tracker counts the requests meeting and missing each SLO, per (SLO, model), cumulatively
// and over rolling windows. It is safe for concurrent use; one per process keeps counters
// monotonic across config reloads.
type Tracker struct {
	mu      sync.Mutex
	series  map[key]*series
	dropped uint64
	// declared holds the latest definition of every SLO a Set declared (at most MaxSeries):
	// Reports lists an SLO that no request matched yet with no requests, rather than not at all.
	declared map[string]*compiled
	now      func() time.Time
	model    func(string) string // the model's label (bounded by the caller)
}

// NewTracker returns an empty Tracker. label maps a record's model to its label (nil: as is);
// now is its clock (nil: time.Now).
func NewTracker(label func(string) string, now func() time.Time) *Tracker {
	if label == nil {
		label = func(s string) string { return s }
	}
	if now == nil {
		now = time.Now
	}
	return &Tracker{series: map[key]*series{}, declared: map[string]*compiled{}, now: now, model: label}
}

// Set is one handler's SLOs bound to the Tracker that counts them; the handler's route
// (pipeline.Route) carries it beside each record to the Tracker's sink.
type Set struct {
	t    *Tracker
	objs []compiled
}

// NewSet compiles a handler's SLOs (checked with Validate) for t.
func (t *Tracker) NewSet(objs []Objective) *Set {
	s := &Set{t: t}
	for i := range objs {
		s.objs = append(s.objs, compile(&objs[i]))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range s.objs {
		if c := &s.objs[i]; t.declared[c.name] != nil || len(t.declared) < MaxSeries {
			t.declared[c.name] = c
		}
	}
	return s
}

// Count counts a finished record against the SLO that s, its handler's Set, selects for it: a
// live request (shadow, replay and mirror traffic is not the service's) whose model and
// tenant one of the Set's SLOs selects. A nil s, or one of another Tracker, counts nothing.
// It runs in a pipeline sink.
func (t *Tracker) Count(r *record.Record, s *Set) {
	if s == nil || s.t != t || r.Class != record.ClassLive {
		return
	}
	for i := range s.objs {
		if c := &s.objs[i]; c.selects(r.Model, r.Tenant) {
			t.count(c, r)
			return
		}
	}
}

func (t *Tracker) count(c *compiled, r *record.Record) {
	var met [3]bool
	good := stats.MeetsEach(r, c.slos, met[:len(c.slos)])
	now := t.now()
	k := key{c.name, t.model(r.Model)}
	t.mu.Lock()
	defer t.mu.Unlock()
	se := t.series[k]
	if se == nil {
		if len(t.series) >= MaxSeries {
			t.dropped++
			return
		}
		se = &series{slo: k.slo, model: k.model, first: now}
		t.series[k] = se
	}
	// The latest config of the SLO states its target and thresholds.
	se.target, se.thresholds = c.target, c.settled
	se.objs = append(append(se.objs[:0], c.objs...), ObjAll)
	var add counts
	add.total = 1
	for i, obj := range c.objs {
		if met[i] {
			add.met[objIndex(obj)] = 1
		}
	}
	if good {
		add.met[3] = 1
	}
	se.cum.add(&add)
	at := now.UnixNano() / int64(bucketWidth)
	b := &se.ring[at%int64(nBuckets)]
	if b.at != at {
		*b = bucket{at: at}
	}
	b.add(&add)
}

func (c *counts) add(o *counts) {
	c.total += o.total
	for i := range c.met {
		c.met[i] += o.met[i]
	}
}

// Counter is the cumulative count of one (SLO, model, objective): requests that met it and
// that missed it.
type Counter struct {
	SLO, Model, Objective string
	Met, Missed           uint64
}

// Series' targets for Prometheus.
type Target struct {
	SLO, Model string
	Target     float64
}

// Counters returns the cumulative counters of every series, sorted, and each series' target.
func (t *Tracker) Counters() ([]Counter, []Target) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var cs []Counter
	var ts []Target
	for _, se := range t.series {
		for _, obj := range se.objs {
			met := se.cum.met[objIndex(obj)]
			cs = append(cs, Counter{SLO: se.slo, Model: se.model, Objective: obj, Met: met, Missed: se.cum.total - met})
		}
		ts = append(ts, Target{SLO: se.slo, Model: se.model, Target: se.target})
	}
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.SLO != b.SLO {
			return a.SLO < b.SLO
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		return objIndex(a.Objective) < objIndex(b.Objective)
	})
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].SLO != ts[j].SLO {
			return ts[i].SLO < ts[j].SLO
		}
		return ts[i].Model < ts[j].Model
	})
	return cs, ts
}

// Dropped counts the records not counted because MaxSeries series existed already.
func (t *Tracker) Dropped() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

// Reset forgets every series (for tests sharing a process-wide Tracker).
func (t *Tracker) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.series = map[key]*series{}
	t.declared = map[string]*compiled{}
	t.dropped = 0
}

// NewJudge is a Set of one SLO that selects every request, named name, with the thresholds
// slos (AIPerf's --goodput syntax): what `llmtap report` judges recorded mirror pairs by. It
// counts nothing in any Tracker.
func NewJudge(name string, slos []stats.SLO) *Set {
	return &Set{objs: []compiled{{name: name, slos: slos}}}
}

// MaxJudged is the most SLOs of a Set that Meets reports on (a bit each).
const MaxJudged = 64

// Meets returns a bit per SLO of the set, in order (the first MaxJudged): set when r meets
// every threshold of that SLO by goodput's rule (stats.Good: a failed request or a missing
// value meets none). With Select, it judges the two records of a mirror pair by the SLO that
// selects the live request, whichever record comes first.
func (s *Set) Meets(r *record.Record) uint64 {
	var bits uint64
	for i := range min(len(s.objs), MaxJudged) {
		if stats.Good(r, s.objs[i].slos) {
			bits |= 1 << i
		}
	}
	return bits
}

// Select returns the index and name of the SLO of the set that counts the requests of model
// and tenant (the first that selects them, as Consume counts); -1 when none does.
func (s *Set) Select(model, tenant string) (int, string) {
	for i := range min(len(s.objs), MaxJudged) {
		if c := &s.objs[i]; c.selects(model, tenant) {
			return i, c.name
		}
	}
	return -1, ""
}
