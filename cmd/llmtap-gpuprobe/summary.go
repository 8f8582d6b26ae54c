package main

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/llmtap/llmtap/telemetry/gpu"
)

// span is the minimum, mean and maximum of one reading over a run.
type span struct {
	n           int
	lo, sum, hi float64
}

func (s *span) add(v float64) {
	if s.n == 0 || v < s.lo {
		s.lo = v
	}
	if s.n == 0 || v > s.hi {
		s.hi = v
	}
	s.n++
	s.sum += v
}

func (s span) mean() float64 {
	if s.n == 0 {
		return math.NaN()
	}
	return s.sum / float64(s.n)
}

// gpuSummary is what the probe reports for one GPU.
type gpuSummary struct {
	dev                              gpu.Device
	samples                          int
	valid                            gpu.Field // fields present in every sample
	powerW, gpuUtil, memUtil         span
	memUsedMiB, tempC, smMHz, memMHz span
	memTotalMiB                      float64
	reasons                          uint64 // OR of every throttle bitmask seen
	counter, integral                gpu.Energy
}

func summarize(dev gpu.Device, samples []gpu.Sample) gpuSummary {
	g := gpuSummary{dev: dev, samples: len(samples), valid: gpu.FieldAll}
	for i := range samples {
		s := &samples[i]
		g.valid &= s.Valid
		if s.Has(gpu.FieldPower) {
			g.powerW.add(float64(s.PowerMW) / 1e3)
		}
		if s.Has(gpu.FieldUtil) {
			g.gpuUtil.add(float64(s.GPUUtil))
			g.memUtil.add(float64(s.MemUtil))
		}
		if s.Has(gpu.FieldMemory) {
			g.memUsedMiB.add(float64(s.MemUsed) / (1 << 20))
			g.memTotalMiB = float64(s.MemTotal) / (1 << 20)
		}
		if s.Has(gpu.FieldTemp) {
			g.tempC.add(float64(s.TempC))
		}
		if s.Has(gpu.FieldSMClock) {
			g.smMHz.add(float64(s.SMClockMHz))
		}
		if s.Has(gpu.FieldMemClock) {
			g.memMHz.add(float64(s.MemClockMHz))
		}
		g.reasons |= s.ThrottleReasons
	}
	if len(samples) > 0 {
		from, to := samples[0].Time, samples[len(samples)-1].Time
		g.counter = gpu.EnergyBetween(samples, from, to)
		g.integral = gpu.PowerIntegral(samples, from, to)
	}
	return g
}

func writeSummary(w io.Writer, info gpu.Info, recent []gpu.Sample, calls callStats) {
	fmt.Fprintf(w, "\nsummary: %d Sample() calls over %d GPU(s): mean %d ns/call (min %d, max %d)\n",
		calls.calls, len(info.Devices), calls.mean.Nanoseconds(), calls.lo.Nanoseconds(), calls.hi.Nanoseconds())
	for _, dev := range info.Devices {
		g := summarize(dev, gpu.ByIndex(nil, recent, dev.Index))
		fmt.Fprintf(w, "GPU %d %s %s\n", dev.Index, dev.Name, dev.UUID)
		fmt.Fprintf(w, "  samples %d over %s, fields in every sample: %v\n",
			g.samples, g.counter.Duration.Round(time.Millisecond), g.valid)
		fmt.Fprintf(w, "  power W min/mean/max %.1f / %.1f / %.1f\n", g.powerW.lo, g.powerW.mean(), g.powerW.hi)
		diff := math.NaN()
		if g.integral.Joules > 0 {
			diff = 100 * (g.counter.Joules - g.integral.Joules) / g.integral.Joules
		}
		fmt.Fprintf(w, "  energy counter %.1f J (%.1f W avg, %d resets) vs integral of power %.1f J: %+.2f%%\n",
			g.counter.Joules, g.counter.AvgWatts(), g.counter.Resets, g.integral.Joules, diff)
		fmt.Fprintf(w, "  util %% gpu min/mean/max %.0f / %.1f / %.0f, memory %.0f / %.1f / %.0f\n",
			g.gpuUtil.lo, g.gpuUtil.mean(), g.gpuUtil.hi, g.memUtil.lo, g.memUtil.mean(), g.memUtil.hi)
		fmt.Fprintf(w, "  memory used MiB min/max %.0f / %.0f of %.0f\n", g.memUsedMiB.lo, g.memUsedMiB.hi, g.memTotalMiB)
		fmt.Fprintf(w, "  temp C min/max %.0f / %.0f; SM clock MHz %.0f / %.0f; mem clock MHz %.0f / %.0f; throttle reasons seen %#x\n",
			g.tempC.lo, g.tempC.hi, g.smMHz.lo, g.smMHz.hi, g.memMHz.lo, g.memMHz.hi, g.reasons)
	}
}
