package stats

import (
	"cmp"
	"slices"
	"sync"

	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"

	"github.com/llmtap/llmtap/internal/limits"
)

// UsageKey identifies the requests one usage row counts: a tenant (empty when the request had
// none), a model and a traffic class, each folded by its labelcap Set.
type UsageKey struct {
	Tenant string `json:"tenant"`
	Model  string `json:"model"`
	Class  string `json:"class"`
}

// Usage is what the requests of one key used, since the aggregator started: counters only,
// exact sums of the records' figures (no distributions: a tenant's latency is in the records).
// Token counts are those of successful and failed requests alike, as a server bills both.
type Usage struct {
	UsageKey
	// Requests counts every request of the key; Errors the failed ones among them.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// InputTokens and OutputTokens are the records' input and output tokens (output with
	// reasoning included); CachedInputTokens, CacheWriteInputTokens and ReasoningOutputTokens
	// are the parts of them the server reported as read from its prompt cache, written to it,
	// and spent reasoning.
	InputTokens           int64 `json:"input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
	// EnergyJ and GPUSeconds sum the records' GPU energy share (joules) and GPU time share
	// (seconds); both split a sample interval equally among the requests in flight in it.
	EnergyJ    float64 `json:"gpu_energy_j"`
	GPUSeconds float64 `json:"gpu_seconds"`
	// Cost sums the records' cost at the price per GPU-hour (basis gpu_hour), in the price's
	// unit; 0 when none is set. ListCost sums their cost at their models' list prices (basis
	// list_price); 0 when no list price matches. They are two figures, never added together.
	Cost     float64 `json:"cost,omitempty"`
	ListCost float64 `json:"list_cost,omitempty"`
	// CostPerMillionTokens and ListCostPerMillionTokens are Cost and ListCost per million of
	// the row's input and output tokens (every request of the row, priced or not); 0 without
	// tokens or cost.
	CostPerMillionTokens     float64 `json:"cost_per_million_tokens,omitempty"`
	ListCostPerMillionTokens float64 `json:"list_cost_per_million_tokens,omitempty"`
}

// perMillion sets the per-million-token figures from the sums.
func (u *Usage) perMillion() {
	if n := u.InputTokens + u.OutputTokens; n > 0 {
		u.CostPerMillionTokens = limits.Finite(u.Cost / float64(n) * 1e6)
		u.ListCostPerMillionTokens = limits.Finite(u.ListCost / float64(n) * 1e6)
	}
}

// Merge adds the counters of o into u (its key aside) and sets the per-million-token figures
// from the new sums: the row of the union of two rows' requests.
func (u *Usage) Merge(o Usage) {
	u.Requests += o.Requests
	u.Errors += o.Errors
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CachedInputTokens += o.CachedInputTokens
	u.CacheWriteInputTokens += o.CacheWriteInputTokens
	u.ReasoningOutputTokens += o.ReasoningOutputTokens
	u.EnergyJ = limits.Finite(u.EnergyJ + o.EnergyJ)
	u.GPUSeconds = limits.Finite(u.GPUSeconds + o.GPUSeconds)
	u.Cost = limits.Finite(u.Cost + o.Cost)
	u.ListCost = limits.Finite(u.ListCost + o.ListCost)
	u.perMillion()
}

// add counts r into u.
func (u *Usage) add(r *record.Record) {
	u.Requests++
	if !r.OK() {
		u.Errors++
	}
	u.InputTokens += max(r.InputTokens, 0)
	u.OutputTokens += max(r.OutputTokens, 0)
	u.CachedInputTokens += max(r.CachedTokens, 0)
	u.CacheWriteInputTokens += max(r.CacheWriteTokens, 0)
	u.ReasoningOutputTokens += max(r.ReasoningTokens, 0)
	// Float sums saturate at the largest finite value (limits.Finite): prices are bounded
	// (limits.MaxPrice), so only a corrupt figure gets there, and every surface still encodes.
	if r.GPU != nil {
		u.EnergyJ = limits.Finite(u.EnergyJ + r.GPU.EnergyJ)
		u.GPUSeconds = limits.Finite(u.GPUSeconds + r.GPU.GPUSeconds)
	}
	if r.Cost != nil {
		u.Cost = limits.Finite(u.Cost + r.Cost.Total)
	}
	if r.ListCost != nil {
		u.ListCost = limits.Finite(u.ListCost + r.ListCost.Total)
	}
}

// usageTable counts usage per UsageKey. Its size is bounded by the Sets that fold tenants and
// models (at most (max+1)² keys per class).
type usageTable struct {
	tenants, models *labelcap.Set
	mu              sync.Mutex
	rows            map[UsageKey]*Usage
}

func newUsageTable(tenants, models *labelcap.Set) *usageTable {
	return &usageTable{tenants: tenants, models: models, rows: map[UsageKey]*Usage{}}
}

func (t *usageTable) add(r *record.Record) {
	k := UsageKey{Tenant: t.tenants.Get(r.Tenant), Model: t.models.Get(r.Model), Class: r.Class}
	t.mu.Lock()
	u := t.rows[k]
	if u == nil {
		u = &Usage{UsageKey: k}
		t.rows[k] = u
	}
	u.add(r)
	t.mu.Unlock()
}

// snapshot returns the rows ordered by tenant, model and class.
func (t *usageTable) snapshot() []Usage {
	t.mu.Lock()
	out := make([]Usage, 0, len(t.rows))
	for _, u := range t.rows {
		out = append(out, *u)
		out[len(out)-1].perMillion()
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b Usage) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Model, b.Model), cmp.Compare(a.Class, b.Class))
	})
	return out
}
