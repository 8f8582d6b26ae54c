package scrape

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/llmtap/llmtap/telemetry/gpu"
)

// dcgm-exporter field names (etc/default-counters.csv) read by DCGMSource.
// The clock-event bitmask is not in the default counter set; it is read
// when an operator enables it, under either of its two names.
const (
	dcgmPower      = "DCGM_FI_DEV_POWER_USAGE"              // W, gauge
	dcgmEnergy     = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" // mJ, counter
	dcgmGPUUtil    = "DCGM_FI_DEV_GPU_UTIL"                 // %
	dcgmMemUtil    = "DCGM_FI_DEV_MEM_COPY_UTIL"            // %
	dcgmFBUsed     = "DCGM_FI_DEV_FB_USED"                  // MiB
	dcgmFBFree     = "DCGM_FI_DEV_FB_FREE"                  // MiB
	dcgmFBReserved = "DCGM_FI_DEV_FB_RESERVED"              // MiB
	dcgmTemp       = "DCGM_FI_DEV_GPU_TEMP"                 // °C
	dcgmSMClock    = "DCGM_FI_DEV_SM_CLOCK"                 // MHz
	dcgmMemClock   = "DCGM_FI_DEV_MEM_CLOCK"                // MHz
	dcgmThrottle   = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"   // bitmask
	dcgmEvents     = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"     // bitmask, newer name
)

const mib = 1 << 20

// DCGMSource reads GPUs from a dcgm-exporter /metrics page instead of
// NVML, so a binary built with CGO_ENABLED=0 (or running where only the
// exporter can see the GPUs, as in Kubernetes) still gets GPU samples. It
// implements [gpu.Source].
//
// GPUs are identified by the exporter's "gpu" (device index) and "UUID"
// labels, and named by "modelName". Series of MIG instances (a non-empty
// "GPU_I_ID" label) are skipped: the Sample describes whole GPUs, as NVML
// does. A field the page lacks for a GPU is left out of [gpu.Sample.Valid].
//
// Values are as fresh as the exporter's collection interval, 30 s by
// default; lower it (-c) for per-request correlation. Sample.Time is when
// the scrape began, not when DCGM read the GPU.
type DCGMSource struct {
	url    string
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc
	byKey  map[dcgmKey]int // scratch: GPU key → index into the result
}

type dcgmKey struct {
	index int
	uuid  string
}

// NewDCGMSource returns a Source scraping url, for example
// "http://127.0.0.1:9400/metrics". It does not contact the exporter until
// the first Sample.
func NewDCGMSource(url string, opts Options) *DCGMSource {
	ctx, cancel := context.WithCancel(context.Background())
	return &DCGMSource{
		url:    url,
		opts:   opts.withDefaults(),
		ctx:    ctx,
		cancel: cancel,
		byKey:  make(map[dcgmKey]int),
	}
}

// Sample scrapes the exporter once and appends one gpu.Sample per GPU, in
// device index order. A failed scrape is returned as an error with no
// samples; it never wraps gpu.ErrNoNVML, because an exporter that is down
// may come back and the Sampler should keep polling.
func (s *DCGMSource) Sample(dst []gpu.Sample) ([]gpu.Sample, error) {
	now := s.opts.Now()
	fams, err := Fetch(s.ctx, s.url, s.opts)
	if err != nil {
		return dst, err
	}
	return appendDCGM(dst, fams, now, s.byKey), nil
}

// Close cancels a scrape in progress and releases idle connections. The
// Source must not be used afterwards.
func (s *DCGMSource) Close() error {
	s.cancel()
	s.opts.Client.CloseIdleConnections()
	return nil
}

// appendDCGM turns a parsed dcgm-exporter page into samples appended to
// dst. byKey is scratch space, cleared on entry.
func appendDCGM(dst []gpu.Sample, fams Families, now time.Time, byKey map[dcgmKey]int) []gpu.Sample {
	clear(byKey)
	base := len(dst)
	// Memory needs used, free and (if present) reserved together, so they
	// are gathered per GPU before being combined.
	type fb struct {
		used, free, reserved float64
		has                  uint8
	}
	var mem []fb

	gpuOf := func(m *dto.Metric) (int, bool) {
		if label(m, "GPU_I_ID") != "" {
			return 0, false
		}
		idx, err := strconv.Atoi(label(m, "gpu"))
		if err != nil || idx < 0 {
			return 0, false
		}
		k := dcgmKey{idx, label(m, "UUID")}
		if i, ok := byKey[k]; ok {
			return i, true
		}
		dst = append(dst, gpu.Sample{Time: now, Index: idx, UUID: k.uuid, Name: label(m, "modelName")})
		mem = append(mem, fb{})
		byKey[k] = len(dst) - 1
		return len(dst) - 1, true
	}
	each := func(name string, fn func(s *gpu.Sample, i int, v float64)) {
		fam := fams[name]
		if fam == nil {
			return
		}
		for _, m := range fam.GetMetric() {
			v, ok := scalar(m)
			if !ok {
				continue
			}
			if i, ok := gpuOf(m); ok {
				fn(&dst[i], i-base, v)
			}
		}
	}
	u32 := func(v, scale float64) (uint32, bool) {
		n, ok := toUint(v, scale, math.MaxUint32)
		return uint32(n), ok
	}

	each(dcgmPower, func(s *gpu.Sample, _ int, v float64) {
		if n, ok := u32(v, 1000); ok {
			s.PowerMW, s.Valid = n, s.Valid|gpu.FieldPower
		}
	})
	each(dcgmEnergy, func(s *gpu.Sample, _ int, v float64) {
		if n, ok := toUint(v, 1, math.MaxUint64); ok {
			s.EnergyMJ, s.Valid = n, s.Valid|gpu.FieldEnergy
		}
	})
	// NVML reads both utilizations in one call, so FieldUtil means both;
	// it is set only when the page has both.
	var utilSeen []uint8
	markUtil := func(s *gpu.Sample, i int, bit uint8) {
		for len(utilSeen) <= i {
			utilSeen = append(utilSeen, 0)
		}
		utilSeen[i] |= bit
		if utilSeen[i] == 3 {
			s.Valid |= gpu.FieldUtil
		}
	}
	each(dcgmGPUUtil, func(s *gpu.Sample, i int, v float64) {
		if n, ok := u32(v, 1); ok {
			s.GPUUtil = n
			markUtil(s, i, 1)
		}
	})
	each(dcgmMemUtil, func(s *gpu.Sample, i int, v float64) {
		if n, ok := u32(v, 1); ok {
			s.MemUtil = n
			markUtil(s, i, 2)
		}
	})
	each(dcgmFBUsed, func(_ *gpu.Sample, i int, v float64) { mem[i].used, mem[i].has = v, mem[i].has|1 })
	each(dcgmFBFree, func(_ *gpu.Sample, i int, v float64) { mem[i].free, mem[i].has = v, mem[i].has|2 })
	each(dcgmFBReserved, func(_ *gpu.Sample, i int, v float64) { mem[i].reserved, mem[i].has = v, mem[i].has|4 })
	each(dcgmTemp, func(s *gpu.Sample, _ int, v float64) {
		if n, ok := u32(v, 1); ok {
			s.TempC, s.Valid = n, s.Valid|gpu.FieldTemp
		}
	})
	each(dcgmSMClock, func(s *gpu.Sample, _ int, v float64) {
		if n, ok := u32(v, 1); ok {
			s.SMClockMHz, s.Valid = n, s.Valid|gpu.FieldSMClock
		}
	})
	each(dcgmMemClock, func(s *gpu.Sample, _ int, v float64) {
		if n, ok := u32(v, 1); ok {
			s.MemClockMHz, s.Valid = n, s.Valid|gpu.FieldMemClock
		}
	})
	throttle := func(s *gpu.Sample, _ int, v float64) {
		if n, ok := toUint(v, 1, math.MaxUint64); ok {
			s.ThrottleReasons, s.Valid = n, s.Valid|gpu.FieldThrottle
		}
	}
	each(dcgmThrottle, throttle)
	each(dcgmEvents, throttle)

	for i := range mem {
		m := mem[i]
		if m.has&3 != 3 {
			continue
		}
		// NVML's GetMemoryInfo counts driver-reserved memory as used and
		// in the total; DCGM reports it apart. Folding it in keeps the two
		// sources comparable.
		used, uok := toUint(m.used+m.reserved, mib, math.MaxUint64)
		total, tok := toUint(m.used+m.free+m.reserved, mib, math.MaxUint64)
		if uok && tok {
			s := &dst[base+i]
			s.MemUsed, s.MemTotal, s.Valid = used, total, s.Valid|gpu.FieldMemory
		}
	}
	slices.SortStableFunc(dst[base:], func(a, b gpu.Sample) int { return a.Index - b.Index })
	return dst
}

var _ gpu.Source = (*DCGMSource)(nil)

// String names the endpoint, for logs.
func (s *DCGMSource) String() string { return fmt.Sprintf("dcgm-exporter %s", s.url) }
