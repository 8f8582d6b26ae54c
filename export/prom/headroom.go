package prom

import (
	"math"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/telemetry/headroom"
)

// PassiveHeadroom reports the passive headroom estimates (telemetry/headroom), read at scrape
// time from the function. An upstream still collecting has no series; a bound the fit leaves
// open (no rise of TTFT seen yet) is +Inf.
type PassiveHeadroom func() []headroom.Estimate

var (
	headroomLabels          = []string{"upstream", "ttft_objective_ms", "bound"}
	descHeadroomConcurrency = prometheus.NewDesc("llmtap_headroom_passive_concurrency",
		"Requests in flight the upstream can take beyond the current ones before its mean TTFT reaches the objective (passive estimate; bound is estimate, low or high of the bootstrap interval).", headroomLabels, nil)
	descHeadroomRate = prometheus.NewDesc("llmtap_headroom_passive_requests_per_second",
		"Requests per second the upstream can take beyond the current rate before its mean TTFT reaches the objective (passive estimate, by Little's law; bound is estimate, low or high).", headroomLabels, nil)
	descHeadroomKnee = prometheus.NewDesc("llmtap_headroom_passive_knee_concurrency",
		"Concurrency at which the upstream's TTFT starts rising, fitted from live traffic.", headroomLabels[:2], nil)
)

// Describe sends the descriptors of the passive headroom series.
func (PassiveHeadroom) Describe(ch chan<- *prometheus.Desc) {
	ch <- descHeadroomConcurrency
	ch <- descHeadroomRate
	ch <- descHeadroomKnee
}

// Collect reads every estimate and sends its series.
func (src PassiveHeadroom) Collect(ch chan<- prometheus.Metric) {
	val := func(p *float64) float64 {
		if p == nil {
			return math.Inf(1)
		}
		return *p
	}
	for _, e := range src() {
		if e.State == "collecting" {
			continue
		}
		obj := strconv.FormatFloat(e.TTFTObjectiveMs, 'g', -1, 64)
		for _, x := range []struct {
			d *prometheus.Desc
			i headroom.Interval
		}{{descHeadroomConcurrency, e.RemainingConcurrency}, {descHeadroomRate, e.RemainingRequestsPerSec}} {
			ch <- prometheus.MustNewConstMetric(x.d, prometheus.GaugeValue, val(x.i.Estimate), e.Upstream, obj, "estimate")
			ch <- prometheus.MustNewConstMetric(x.d, prometheus.GaugeValue, val(x.i.Low), e.Upstream, obj, "low")
			ch <- prometheus.MustNewConstMetric(x.d, prometheus.GaugeValue, val(x.i.High), e.Upstream, obj, "high")
		}
		ch <- prometheus.MustNewConstMetric(descHeadroomKnee, prometheus.GaugeValue, e.KneeConcurrency, e.Upstream, obj)
	}
}

var _ prometheus.Collector = PassiveHeadroom(nil)
