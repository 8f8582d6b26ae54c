package record

// GPUUsage is what the GPUs did while one request was in flight, from the GPU samples taken
// during its lifetime (start to response complete). It is filled in the record pipeline, off
// the request path, when GPU sampling runs; the rules and their limits are in
// telemetry/timeline's package documentation.
type GPUUsage struct {
	// UtilPercent is the GPU utilization (percent of time a kernel ran) averaged over the
	// request's lifetime and over every sampled GPU, time-weighted.
	UtilPercent float64 `json:"util_percent"`
	// PowerW is the total power of every sampled GPU, averaged over the request's lifetime,
	// in watts.
	PowerW float64 `json:"power_w"`
	// EnergyJ is the request's share of the energy the GPUs used during its lifetime, in
	// joules: each sample interval's energy split equally among the requests in flight in it
	// (the engine's in-flight count at the interval's two samples, averaged, at least 1),
	// times the fraction of the interval the request overlapped.
	EnergyJ float64 `json:"energy_j"`
	// GPUSeconds is the request's share of the GPUs' time during its lifetime, in GPU-seconds:
	// each sample interval's length times the number of GPUs sampled, split equally among the
	// requests in flight in it exactly as EnergyJ is, times the fraction of the interval the
	// request overlapped. Summed over a tenant's requests, it is the tenant's share of the
	// GPU time, whatever the GPUs' utilization.
	GPUSeconds float64 `json:"gpu_seconds"`
	// CoveredMs is how much of the request's lifetime the samples covered, in milliseconds;
	// less than the lifetime when the request began before the oldest sample kept or ended
	// after the newest, in which case the figures describe the covered part.
	CoveredMs float64 `json:"covered_ms"`
	// GPUs is the number of GPUs sampled.
	GPUs int `json:"gpus"`
}

// Cost is what one request cost, by one basis: its GPU time at the price per GPU-hour (a
// record's "cost") or its tokens at its model's list prices (a record's "list_cost").
type Cost struct {
	// Total is the request's cost in the unit of the price (say, US dollars): its GPUSeconds
	// at the price per GPU-hour (basis "gpu_hour"), or its tokens at the model's list prices
	// (basis "list_price").
	Total float64 `json:"total"`
	// PerMillionTokens is Total per million tokens of the request (input and output); 0 when
	// the request has no tokens.
	PerMillionTokens float64 `json:"per_million_tokens"`
	// Basis says how Total was computed: "gpu_hour" or "list_price".
	Basis string `json:"basis"`
}

// Bases of a Cost.
const (
	BasisGPUHour   = "gpu_hour"   // GPU-seconds at the price per GPU-hour
	BasisListPrice = "list_price" // tokens at the model's list prices
)

// NewCost is a cost of total by basis for a request of tokens input and output tokens.
func NewCost(total float64, basis string, tokens int64) *Cost {
	c := &Cost{Total: total, Basis: basis}
	if tokens > 0 {
		c.PerMillionTokens = total / float64(tokens) * 1e6
	}
	return c
}
