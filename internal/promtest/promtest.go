// Package promtest reads Prometheus collectors back in tests: every sample by its name and
// sorted labels, checked by a pedantic registry against its descriptor.
package promtest

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Gather registers cs in a fresh pedantic registry (which checks every series against its
// descriptor) and returns each sample's value (counter, gauge, or a histogram's count) by
// name{label=value,…}, labels sorted.
func Gather(t testing.TB, cs ...prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]float64)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			slices.Sort(ls)
			key := mf.GetName()
			if len(ls) > 0 {
				key += "{" + strings.Join(ls, ",") + "}"
			}
			out[key] = m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return out
}

// Check compares the samples named in want; a want of 0 means "absent".
func Check(t testing.TB, got, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; g != v || (v == 0 && ok) {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}
