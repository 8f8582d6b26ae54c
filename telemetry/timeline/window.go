package timeline

import (
	"time"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/scrape"
)

// win is one window being filled. Its slices keep their capacity when the ring slot is reused,
// so a steady timeline allocates little.
type win struct {
	seq         int64
	inFlight    int64
	hasInFlight bool
	late        int64
	lateStamp   uint64 // Timeline.adds of the last record counted in late
	nSeries     int
	seriesBuf   []series
	nGPUs       int
	gpuBuf      []gpuAcc
	nServers    int
	serverBuf   []serverAcc
}

func (w *win) reset(seq int64) {
	w.seq, w.inFlight, w.hasInFlight, w.late = seq, 0, false, 0
	w.nSeries, w.nGPUs, w.nServers = 0, 0, 0
}

// series returns the series of (class, model), adding it when new. The model was already
// folded by the timeline's Models set, so a window holds at most (Max + 1) series per class.
func (w *win) series(class, model string) *series {
	for i := range w.nSeries {
		if s := &w.seriesBuf[i]; s.class == class && s.model == model {
			return s
		}
	}
	if w.nSeries == len(w.seriesBuf) {
		w.seriesBuf = append(w.seriesBuf, series{})
	}
	s := &w.seriesBuf[w.nSeries]
	w.nSeries++
	s.reset(class, model)
	return s
}

func (w *win) gpu(smp *gpu.Sample, maxN int) *gpuAcc {
	for i := range w.nGPUs {
		if g := &w.gpuBuf[i]; g.index == smp.Index && g.uuid == smp.UUID {
			return g
		}
	}
	if w.nGPUs >= maxN {
		return nil
	}
	if w.nGPUs == len(w.gpuBuf) {
		w.gpuBuf = append(w.gpuBuf, gpuAcc{})
	}
	g := &w.gpuBuf[w.nGPUs]
	w.nGPUs++
	*g = gpuAcc{index: smp.Index, uuid: smp.UUID, name: smp.Name}
	return g
}

func (w *win) findGPU(index int, uuid string) *gpuAcc {
	for i := range w.nGPUs {
		if g := &w.gpuBuf[i]; g.index == index && g.uuid == uuid {
			return g
		}
	}
	return nil
}

func (w *win) server(target string, kind scrape.ServerKind, model string, maxN int) *serverAcc {
	if sv := w.findServer(target, model); sv != nil {
		return sv
	}
	if w.nServers >= maxN {
		return nil
	}
	if w.nServers == len(w.serverBuf) {
		w.serverBuf = append(w.serverBuf, serverAcc{})
	}
	sv := &w.serverBuf[w.nServers]
	w.nServers++
	sv.reset(target, kind, model)
	return sv
}

func (w *win) findServer(target, model string) *serverAcc {
	for i := range w.nServers {
		if sv := &w.serverBuf[i]; sv.target == target && sv.model == model {
			return sv
		}
	}
	return nil
}

// errCount is the count of one error class.
type errCount struct {
	class string
	n     int64
}

// series is one (class, model) in one window.
type series struct {
	class, model        string
	requests, errors    int64
	byError             []errCount
	inFlight            int64
	inTokens, outTokens float64
	ttft, itl           []float32
	nTTFT, nITL         int64
}

func (s *series) reset(class, model string) {
	*s = series{class: class, model: model, byError: s.byError[:0], ttft: s.ttft[:0], itl: s.itl[:0]}
}

func (s *series) addError(class string) {
	for i := range s.byError {
		if s.byError[i].class == class {
			s.byError[i].n++
			return
		}
	}
	s.byError = append(s.byError, errCount{class, 1})
}

// gpuAcc accumulates one GPU's samples in one window.
type gpuAcc struct {
	index                  int
	uuid, name             string
	n                      int
	valid                  gpu.Field // fields seen in any sample
	util, memUtil, powerMW float64   // sums
	nUtil, nPower          int
	smMHz, memMHz          float64 // sums
	nSM, nMem              int
	memUsed, memTotal      uint64 // last
	tempC                  uint32 // max
	reasons                uint64 // OR
	firstE, lastE          uint64
	nE                     int
	resets                 int
	firstPT, lastPT        time.Time // first and last power sample, for the fallback integral
	firstPMW, lastPMW      uint32
	powerJ                 float64 // trapezoid integral between this window's power samples
}

func (g *gpuAcc) add(s *gpu.Sample) {
	g.n++
	g.valid |= s.Valid
	if s.Has(gpu.FieldUtil) {
		g.util += float64(s.GPUUtil)
		g.memUtil += float64(s.MemUtil)
		g.nUtil++
	}
	if s.Has(gpu.FieldPower) {
		g.powerMW += float64(s.PowerMW)
		if g.nPower > 0 && s.Time.After(g.lastPT) {
			g.powerJ += (float64(g.lastPMW) + float64(s.PowerMW)) / 2e3 * s.Time.Sub(g.lastPT).Seconds()
		} else if g.nPower == 0 {
			g.firstPT, g.firstPMW = s.Time, s.PowerMW
		}
		g.lastPT, g.lastPMW = s.Time, s.PowerMW
		g.nPower++
	}
	if s.Has(gpu.FieldMemory) {
		g.memUsed, g.memTotal = s.MemUsed, s.MemTotal
	}
	if s.Has(gpu.FieldTemp) {
		g.tempC = max(g.tempC, s.TempC)
	}
	if s.Has(gpu.FieldSMClock) {
		g.smMHz += float64(s.SMClockMHz)
		g.nSM++
	}
	if s.Has(gpu.FieldMemClock) {
		g.memMHz += float64(s.MemClockMHz)
		g.nMem++
	}
	if s.Has(gpu.FieldThrottle) {
		g.reasons |= s.ThrottleReasons
	}
	if s.Has(gpu.FieldEnergy) {
		if g.nE == 0 {
			g.firstE = s.EnergyMJ
		} else if s.EnergyMJ < g.lastE {
			g.resets++
			g.firstE = s.EnergyMJ // count from the reset on
		}
		g.lastE = s.EnergyMJ
		g.nE++
	}
}

// serverAcc keeps one model's first and last scrape of one server in one window.
type serverAcc struct {
	target      string
	kind        scrape.ServerKind
	model       string
	n           int
	first, last scrape.ModelMetrics
	firstT      time.Time
	lastT       time.Time
}

func (sv *serverAcc) reset(target string, kind scrape.ServerKind, model string) {
	sv.target, sv.kind, sv.model, sv.n = target, kind, model, 0
}

func (sv *serverAcc) add(m *scrape.ModelMetrics, at time.Time) {
	if sv.n == 0 {
		copyModel(&sv.first, m)
		sv.firstT = at
	}
	copyModel(&sv.last, m)
	sv.lastT = at
	sv.n++
}

// copyModel copies m into dst, reusing dst's histogram slices.
func copyModel(dst, m *scrape.ModelMetrics) {
	ttft, itl, e2e := dst.TTFT, dst.ITL, dst.E2E
	queue, prefill, decode := dst.Queue, dst.Prefill, dst.Decode
	*dst = *m
	dst.TTFT = copyHist(ttft, &m.TTFT)
	dst.ITL = copyHist(itl, &m.ITL)
	dst.E2E = copyHist(e2e, &m.E2E)
	dst.Queue = copyHist(queue, &m.Queue)
	dst.Prefill = copyHist(prefill, &m.Prefill)
	dst.Decode = copyHist(decode, &m.Decode)
}

func copyHist(dst scrape.Histogram, h *scrape.Histogram) scrape.Histogram {
	dst.UpperBounds = append(dst.UpperBounds[:0], h.UpperBounds...)
	dst.Cumulative = append(dst.Cumulative[:0], h.Cumulative...)
	dst.Sum, dst.Count = h.Sum, h.Count
	return dst
}
