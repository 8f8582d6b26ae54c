package gpu

import "time"

// Energy is the energy one GPU used over a window, with what it was computed
// from, so a report can say how much data stood behind the figure.
type Energy struct {
	// Joules is the energy over the window.
	Joules float64
	// Duration is the time between the first and last sample used; it may
	// be shorter than the window asked for when samples do not reach its
	// edges.
	Duration time.Duration
	// Samples is how many samples were used.
	Samples int
	// Resets counts intervals over which the energy counter went
	// backwards (a driver reload resets it to zero). Such an interval
	// contributes nothing instead of a huge or negative value, so Joules
	// is then a lower bound.
	Resets int
}

// AvgWatts is Joules divided by Duration, or 0 when Duration is zero.
func (e Energy) AvgWatts() float64 {
	if e.Duration <= 0 {
		return 0
	}
	return e.Joules / e.Duration.Seconds()
}

// EnergyBetween returns the energy one GPU used between t0 and t1
// (inclusive) from the differences of its total energy counter. samples must
// belong to one GPU (see [ByIndex]) and be in time order; samples outside the
// window or without [FieldEnergy] are ignored. Fewer than two usable samples
// give a zero Energy with Samples set.
//
// The counter is preferred over integrating power: it is accumulated by the
// driver at its own rate, so it sees power changes between polls that a
// sampled one-second average smooths away. It is quantized in time, though:
// on an H200 it advanced every 100 ms, so consecutive 250 ms polls of a
// steady 77 W GPU differed by 15.5 J and 23.2 J alternately, and a window
// shorter than about a second carries that ±100 ms of error.
func EnergyBetween(samples []Sample, t0, t1 time.Time) Energy {
	return between(samples, t0, t1, FieldEnergy, func(e *Energy, prev, s *Sample) {
		if s.EnergyMJ >= prev.EnergyMJ {
			e.Joules += float64(s.EnergyMJ-prev.EnergyMJ) / 1e3
		} else {
			e.Resets++
		}
	})
}

// PowerIntegral returns the energy one GPU used between t0 and t1
// (inclusive) by integrating its power readings with the trapezoid rule. It
// is the fallback for GPUs without an energy counter and a cross-check of
// EnergyBetween; samples must belong to one GPU and be in time order, and
// samples outside the window or without [FieldPower] are ignored.
func PowerIntegral(samples []Sample, t0, t1 time.Time) Energy {
	return between(samples, t0, t1, FieldPower, func(e *Energy, prev, s *Sample) {
		if dt := s.Time.Sub(prev.Time); dt > 0 {
			meanMW := (float64(s.PowerMW) + float64(prev.PowerMW)) / 2
			e.Joules += meanMW / 1e3 * dt.Seconds()
		}
	})
}

// between walks the samples that have field and lie between t0 and t1 (inclusive), counting
// them in Samples and their span in Duration, and calls step with each of them but the first
// and the usable sample before it.
func between(samples []Sample, t0, t1 time.Time, field Field, step func(e *Energy, prev, s *Sample)) Energy {
	var e Energy
	var first, prev *Sample
	for i := range samples {
		s := &samples[i]
		if !s.Has(field) || s.Time.Before(t0) || s.Time.After(t1) {
			continue
		}
		e.Samples++
		if prev == nil {
			first, prev = s, s
			continue
		}
		step(&e, prev, s)
		prev = s
	}
	if first != nil {
		e.Duration = prev.Time.Sub(first.Time)
	}
	return e
}

// ByIndex appends the samples of GPU index to dst, keeping their order, and
// returns the extended slice. It separates the interleaved output of a
// multi-GPU Source before EnergyBetween or PowerIntegral.
func ByIndex(dst, samples []Sample, index int) []Sample {
	for i := range samples {
		if samples[i].Index == index {
			dst = append(dst, samples[i])
		}
	}
	return dst
}
