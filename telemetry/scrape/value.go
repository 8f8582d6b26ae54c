package scrape

import (
	"math"

	dto "github.com/prometheus/client_model/go"
)

// label returns the value of the label called name on m, or "".
func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// scalar returns the value of a counter, gauge or untyped sample, and false
// for histograms, summaries and NaN. Exporters differ in which TYPE they
// declare for the same series (a "_total" sample whose TYPE line named the
// bare counter parses as untyped), so the type is not checked.
func scalar(m *dto.Metric) (float64, bool) {
	var v float64
	switch {
	case m.Counter != nil:
		v = m.GetCounter().GetValue()
	case m.Gauge != nil:
		v = m.GetGauge().GetValue()
	case m.Untyped != nil:
		v = m.GetUntyped().GetValue()
	default:
		return 0, false
	}
	if math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// toUint converts a reading to an unsigned integer after scaling, rounding
// to nearest. Negative, infinite or out-of-range values are reported as
// unreadable rather than clamped, because a clamped value would look valid.
func toUint(v, scale float64, max uint64) (uint64, bool) {
	v *= scale
	if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v > float64(max) {
		return 0, false
	}
	return uint64(math.Round(v)), true
}
