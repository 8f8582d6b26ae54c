package timeline

import (
	"sync"
	"sync/atomic"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/price"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/scrape"
)

// Hub routes what a process measures — GPU polls, inference-server scrapes, finished request
// records — to its running timeline, if any, and to its energy attributor, whichever sampler,
// scraper or pipeline produced them; it keeps the latest GPU poll for the exporters, and prices
// records (per GPU-hour and at list prices). Its methods are safe for concurrent use.
type Hub struct {
	attr    *Attributor
	prices  price.Prices
	tl      atomic.Pointer[Timeline]
	gpuSeen atomic.Bool // some GPU poll has reached the attributor

	mu     sync.Mutex
	latest []gpu.Sample
}

// NewHub returns a hub with no timeline.
func NewHub() *Hub { return &Hub{attr: NewAttributor(0)} }

// Timeline returns the running timeline, or nil.
func (h *Hub) Timeline() *Timeline { return h.tl.Load() }

// SetPrice sets the price per GPU-hour the attributor gives each record a cost by (0: none).
func (h *Hub) SetPrice(perGPUHour float64) { h.attr.SetPrice(perGPUHour) }

// SetListPrices sets the per-model list prices each record gets a list cost by (nil: none).
func (h *Hub) SetListPrices(t *price.Table) { h.prices.Set(t) }

// OnGPU takes one poll of every GPU, with the number of requests in flight at that moment.
func (h *Hub) OnGPU(s []gpu.Sample, inFlight int64) {
	h.attr.Observe(s, inFlight)
	h.gpuSeen.Store(true)
	if tl := h.tl.Load(); tl != nil {
		tl.AddGPU(s)
	}
	h.mu.Lock()
	h.latest = append(h.latest[:0], s...)
	h.mu.Unlock()
}

// ClearGPU forgets the latest poll when its source stops, so exporters show no stale GPU.
func (h *Hub) ClearGPU() {
	h.mu.Lock()
	h.latest = h.latest[:0]
	h.mu.Unlock()
}

// LatestGPU appends the latest poll (one sample per GPU) to dst; nothing after ClearGPU.
func (h *Hub) LatestGPU(dst []gpu.Sample) []gpu.Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append(dst, h.latest...)
}

// OnServer takes one scrape of the inference server's page at target.
func (h *Hub) OnServer(target string, sm *scrape.ServerMetrics) {
	if tl := h.tl.Load(); tl != nil {
		tl.AddServer(target, sm)
	}
}

// Enrich is the record pipeline step that gives a record its GPU figures (record.GPU and its
// cost), once some GPU poll has arrived, and its cost at list prices (record.ListCost).
func (h *Hub) Enrich(r *record.Record) {
	if h.gpuSeen.Load() {
		h.attr.Enrich(r)
	}
	h.prices.Enrich(r)
}

// Consume hands a finished record to the running timeline (a record pipeline sink).
func (h *Hub) Consume(r *record.Record) {
	if tl := h.tl.Load(); tl != nil {
		tl.Add(r)
	}
}
