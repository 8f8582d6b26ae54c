package mirror

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/llmtap/llmtap/telemetry/compare"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/slo"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// Defaults of the Pairer.
const (
	// DefaultPairWindow is how many recent pairs the summary's percentiles are over.
	DefaultPairWindow = 16384
	// DefaultMaxPending is how many sent copies may wait for their records before the oldest
	// is given up (counted as unpaired).
	DefaultMaxPending = 4096
)

// Pairer pairs the finalized record of a live request with the record of its mirror copy. Its
// Consume goes among the measurement engine's record sinks; Expect is called by a Mirror for
// every copy it sends, before the live request's record can exist. It is safe for concurrent
// use.
type Pairer struct {
	window, maxPending int

	mu      sync.Mutex
	seq     uint64
	pending map[string]*half
	ring    []Pair // the most recent pairs, oldest at next once full
	next    int
	total   uint64 // pairs made since start
	lost    uint64 // copies given up unpaired

	expecting atomic.Int64 // len(pending), read without the lock on the hot path

	// canary holds each model's pairs since the start, up to the verdict's last look, and the
	// verdict of the last look taken (see Verdicts).
	verdict    VerdictOptions
	verdictKey string
	canary     map[string]*canaryModel

	// judge judges the records that carry no SLOs of their own (SetSLO); verdictJudge, the
	// verdict's own objectives (VerdictOptions.SLO), judges every record.
	judge, verdictJudge SLOJudge
}

// SLOJudge judges the two records of a pair by the SLO that applies to the live request: a
// record comes with one (its handler's SLOs, a *slo.Set, given to ConsumeJudged), or the
// Pairer holds one (SetSLO).
type SLOJudge interface {
	// Meets returns a bit per SLO, set when r meets every threshold of it (goodput's rule).
	Meets(r *record.Record) uint64
	// Select returns the index and name of the SLO that applies to the requests of model and
	// tenant; -1 when none does.
	Select(model, tenant string) (int, string)
}

// maxCanaryModels bounds the models a Pairer keeps verdict pairs for; later models share
// OtherModel.
const maxCanaryModels = 64

// OtherModel is the model the verdict pairs of models past the first 64 are kept under.
const OtherModel = "_other"

// canaryModel is one model's pairs for the verdict and its last verdict.
type canaryModel struct {
	pairs []Pair
	last  *Verdict
}

// half is a copy waiting for its two records.
type half struct {
	seq           uint64
	live, mirror  *Side
	model, tenant string
	judge         SLOJudge // the live record's, else the mirror record's
}

// Side is what a pair keeps of one record; a nil metric did not apply (a failed or
// non-streaming request has no TTFT).
type Side struct {
	// OK is true when the request succeeded (its record has no error class).
	OK bool `json:"ok"`
	// TTFTMs, ITLMs and LatencyMs are the record's ttft_ms, itl_ms and request_latency_ms.
	TTFTMs    *float64 `json:"ttft_ms"`
	ITLMs     *float64 `json:"itl_ms"`
	LatencyMs *float64 `json:"request_latency_ms"`
	// OutputTokens is the record's output_tokens (nil for a failed request).
	OutputTokens *float64 `json:"output_tokens"`
	// SLOMet is whether the request met every threshold of the pair's SLO (goodput's rule: a
	// failed request meets none); nil when no SLO applies to the live request.
	SLOMet *bool `json:"slo_met,omitempty"`

	met uint64 // the SLOJudge's Meets of the record
}

// Pair is a live request and its mirror copy.
type Pair struct {
	// RequestID is the live request's id, which its copy carried as X-Request-Id.
	RequestID string `json:"request_id"`
	// Model is the live request's model.
	Model string `json:"model"`
	// Live and Mirror are the two measurements.
	Live   Side `json:"live"`
	Mirror Side `json:"mirror"`
	// SLO names the SLO both sides were judged by (Side.SLOMet); empty when none applies.
	SLO string `json:"slo,omitempty"`
}

// NewPairer returns a Pairer that keeps the most recent window pairs and at most maxPending
// unpaired copies (zero means the defaults).
func NewPairer(window, maxPending int) *Pairer {
	if window <= 0 {
		window = DefaultPairWindow
	}
	if maxPending <= 0 {
		maxPending = DefaultMaxPending
	}
	return &Pairer{window: window, maxPending: maxPending, pending: make(map[string]*half), canary: make(map[string]*canaryModel)}
}

// SetVerdict sets the verdict's margins and looks and names what is being judged (the mirror
// upstream): a change of either starts every model's verdict afresh, and a change of what is
// judged also empties the window of pairs the summary is over (its figures would mix the old
// mirror with the new), while the same settings again (a config reload that keeps the mirror)
// keep the pairs gathered so far.
func (p *Pairer) SetVerdict(key string, o VerdictOptions) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o.withDefaults() != p.verdict.withDefaults() || key != p.verdictKey {
		clear(p.canary)
	}
	if key != p.verdictKey {
		p.ring, p.next = p.ring[:0], 0
	}
	p.verdict, p.verdictKey = o, key
	p.verdictJudge = nil
	if slos, err := stats.ParseSLOs(o.SLO); err == nil && len(slos) > 0 { // Validate reports an error
		p.verdictJudge = slo.NewJudge("verdict", slos)
	}
}

// SetSLO sets the judge of the records that carry no SLOs of their own (`llmtap report`
// judges recorded pairs so); nil: none.
func (p *Pairer) SetSLO(j SLOJudge) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.judge = j
}

// Expect registers a copy sent for the live request id. A second copy of the same id while the
// first is unpaired replaces it (the first is counted as unpaired).
func (p *Pairer) Expect(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, dup := p.pending[id]; dup {
		p.lost++
	} else if len(p.pending) >= p.maxPending {
		p.evictOldest()
	}
	p.seq++
	p.pending[id] = &half{seq: p.seq}
	p.expecting.Store(int64(len(p.pending)))
}

// evictOldest gives up the oldest pending copy. It is O(pending), and only runs when records
// go missing (dropped by a full pipeline), so pending filled up.
func (p *Pairer) evictOldest() {
	var oldest string
	var min uint64
	for id, h := range p.pending {
		if oldest == "" || h.seq < min {
			oldest, min = id, h.seq
		}
	}
	delete(p.pending, oldest)
	p.lost++
}

// Consume takes a finalized record: a live or mirror record of an expected id becomes one half
// of a pair. Every other record passes at the cost of an atomic load.
func (p *Pairer) Consume(r *record.Record) { p.ConsumeJudged(r, nil) }

// ConsumeJudged is Consume for a record that comes with the SLOs of its handler (nil: none).
func (p *Pairer) ConsumeJudged(r *record.Record, set *slo.Set) {
	if p.expecting.Load() == 0 || (r.Class != record.ClassLive && r.Class != record.ClassMirror) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.pending[r.RequestID]
	if h == nil {
		return
	}
	s := &Side{OK: r.OK(), TTFTMs: r.TTFTMs, ITLMs: r.ITLMs, LatencyMs: r.RequestLatencyMs}
	if r.OK() {
		n := float64(r.OutputTokens)
		s.OutputTokens = &n
	}
	j := p.verdictJudge
	if j == nil && set != nil {
		j = set
	}
	if j == nil {
		j = p.judge
	}
	if j != nil {
		s.met = j.Meets(r)
		if h.judge == nil || r.Class == record.ClassLive {
			h.judge = j
		}
	}
	if r.Class == record.ClassLive {
		h.live, h.model, h.tenant = s, r.Model, r.Tenant
	} else {
		h.mirror = s
		if h.model == "" {
			h.model = r.Model
		}
	}
	if h.live == nil || h.mirror == nil {
		return
	}
	delete(p.pending, r.RequestID)
	p.expecting.Store(int64(len(p.pending)))
	pair := Pair{RequestID: r.RequestID, Model: h.model, Live: *h.live, Mirror: *h.mirror}
	if h.judge != nil {
		if i, name := h.judge.Select(h.model, h.tenant); i >= 0 {
			pair.SLO = name
			lm, mm := pair.Live.met&(1<<i) != 0, pair.Mirror.met&(1<<i) != 0
			pair.Live.SLOMet, pair.Mirror.SLOMet = &lm, &mm
		}
	}
	if len(p.ring) < p.window {
		p.ring = append(p.ring, pair)
	} else {
		p.ring[p.next] = pair
		p.next = (p.next + 1) % p.window
	}
	p.total++
	cm := p.canary[pair.Model]
	if cm == nil {
		model := pair.Model
		if len(p.canary) >= maxCanaryModels {
			model = OtherModel
		}
		if cm = p.canary[model]; cm == nil {
			cm = &canaryModel{}
			p.canary[model] = cm
		}
	}
	if len(cm.pairs) < p.verdict.MaxPairs() {
		cm.pairs = append(cm.pairs, pair)
	}
}

// ModelVerdict is one model's canary verdict.
type ModelVerdict struct {
	Model string `json:"model"`
	Verdict
}

// Verdicts returns every model's canary verdict, sorted by model. A verdict is taken when the
// model's pairs reach a look and kept until the next, so reading it often changes nothing.
func (p *Pairer) Verdicts() []ModelVerdict {
	p.mu.Lock()
	type todo struct {
		model string
		cm    *canaryModel
		pairs []Pair
	}
	var work []todo
	out := make([]ModelVerdict, 0, len(p.canary))
	o := p.verdict
	for model, cm := range p.canary {
		work = append(work, todo{model, cm, cm.pairs[:len(cm.pairs):len(cm.pairs)]})
	}
	p.mu.Unlock()
	for _, w := range work {
		look := o.lookAt(len(w.pairs))
		p.mu.Lock()
		last := w.cm.last
		p.mu.Unlock()
		if last == nil || last.Look != look+1 {
			v := Judge(w.pairs, o) // off the lock: sorting a look's pairs
			last = &v
			p.mu.Lock()
			w.cm.last = last
			p.mu.Unlock()
		}
		out = append(out, ModelVerdict{Model: w.model, Verdict: *last})
	}
	slices.SortFunc(out, func(a, b ModelVerdict) int { return strings.Compare(a.Model, b.Model) })
	return out
}

// Pairs returns the pairs in the window, oldest first.
func (p *Pairer) Pairs() []Pair {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Pair, 0, len(p.ring))
	out = append(out, p.ring[p.next:]...)
	return append(out, p.ring[:p.next]...)
}

// Summary compares live and mirror over the pairs in the window, per model.
type Summary struct {
	// Pairs counts pairs made since the process started.
	Pairs uint64 `json:"pairs_total"`
	// Pending is the number of copies sent whose two records have not both arrived.
	Pending int `json:"pending"`
	// Unpaired counts copies given up before both records arrived: their records were lost
	// (a full record pipeline) or a copy of the same request id replaced them.
	Unpaired uint64 `json:"unpaired"`
	// Window is the most pairs kept for the percentiles (of all models together).
	Window int `json:"window"`
	// Models holds one comparison per model, sorted by model.
	Models []ModelSummary `json:"models"`
}

// ModelSummary compares live and mirror for one model's pairs in the window.
type ModelSummary struct {
	// Model is the live request's model.
	Model string `json:"model"`
	// Pairs is the number of this model's pairs in the window.
	Pairs int `json:"pairs"`
	// BothOK is how many of them succeeded on both sides; the metrics are over these only.
	BothOK int `json:"both_ok"`
	// TTFT, ITL and Latency compare the metric over the pairs where both sides have it.
	TTFT    Comparison `json:"ttft_ms"`
	ITL     Comparison `json:"itl_ms"`
	Latency Comparison `json:"request_latency_ms"`
}

// Comparison is one metric, live beside mirror, over the same requests.
type Comparison struct {
	// Count is the number of pairs the figures are over.
	Count int `json:"count"`
	// Live and Mirror are the metric's median and 99th percentile on each side, in ms.
	Live   Quantiles `json:"live"`
	Mirror Quantiles `json:"mirror"`
	// DiffP50 is the median of the per-pair differences, mirror minus live, in ms: positive
	// when the mirror upstream is slower on the same requests. It is not the difference of
	// the medians.
	DiffP50 float64 `json:"diff_p50"`
}

// Quantiles are the median and 99th percentile of a metric, in ms.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// Summary returns the comparison of the pairs in the window.
func (p *Pairer) Summary() Summary {
	pairs := p.Pairs()
	p.mu.Lock()
	s := Summary{Pairs: p.total, Pending: len(p.pending), Unpaired: p.lost, Window: p.window, Models: []ModelSummary{}}
	p.mu.Unlock()
	byModel := make(map[string][]Pair)
	for _, pr := range pairs {
		byModel[pr.Model] = append(byModel[pr.Model], pr)
	}
	for model, prs := range byModel {
		ms := ModelSummary{Model: model, Pairs: len(prs)}
		var ok []Pair
		for _, pr := range prs {
			if pr.Live.OK && pr.Mirror.OK {
				ok = append(ok, pr)
			}
		}
		ms.BothOK = len(ok)
		ms.TTFT = summarize(ok, func(s Side) *float64 { return s.TTFTMs })
		ms.ITL = summarize(ok, func(s Side) *float64 { return s.ITLMs })
		ms.Latency = summarize(ok, func(s Side) *float64 { return s.LatencyMs })
		s.Models = append(s.Models, ms)
	}
	slices.SortFunc(s.Models, func(a, b ModelSummary) int {
		switch {
		case a.Model < b.Model:
			return -1
		case a.Model > b.Model:
			return 1
		}
		return 0
	})
	return s
}

// summarize computes one metric's comparison over the pairs where both sides have it.
func summarize(pairs []Pair, metric func(Side) *float64) Comparison {
	var live, mirror, diff []float64
	for _, pr := range pairs {
		l, m := metric(pr.Live), metric(pr.Mirror)
		if l == nil || m == nil {
			continue
		}
		live, mirror, diff = append(live, *l), append(mirror, *m), append(diff, *m-*l)
	}
	return Comparison{
		Count:   len(diff),
		Live:    Quantiles{P50: compare.NearestRank(live, 0.50), P99: compare.NearestRank(live, 0.99)},
		Mirror:  Quantiles{P50: compare.NearestRank(mirror, 0.50), P99: compare.NearestRank(mirror, 0.99)},
		DiffP50: compare.NearestRank(diff, 0.50),
	}
}

// Interface guards: a Pairer is a record sink of the measurement engine.
var _ interface{ Consume(*record.Record) } = (*Pairer)(nil)
