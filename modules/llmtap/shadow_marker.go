package llmtap

import (
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/shadow/marker"
	"github.com/llmtap/llmtap/telemetry/record"
)

// processMarker signs the marker header of llmtap's own traffic (shadow load, trace replay,
// mirror copies). Its key is drawn from crypto/rand once per process and never leaves it, so
// only this process can produce a mark that the handler accepts.
var processMarker = marker.New()

// markedClasses are the classes a verified mark may carry; any other class in a mark that
// verifies (there is none, since only this process signs) would still be live.
var markedClasses = map[string]string{
	record.ClassShadow: record.ClassShadow,
	record.ClassReplay: record.ClassReplay,
	record.ClassMirror: record.ClassMirror,
}

// forgedMarks counts requests that carried the marker header with a value that did not verify.
var forgedMarks atomic.Uint64

var metricForged = prometheus.NewCounterFunc(prometheus.CounterOpts{
	Name: "llmtap_shadow_marker_forged_total",
	Help: "Requests that carried the Llmtap-Shadow header with a value this process did not sign; they were measured as live traffic.",
}, func() float64 { return float64(forgedMarks.Load()) })

// classify returns the traffic class of r: the class of a marker header this process signed,
// or live. A verified mark is removed from r before it goes upstream, so upstreams (and their
// logs) never see one and cannot tell shadow traffic from live traffic by it; a value that does
// not verify is counted as forged and left in place, since a live request passes unchanged.
func classify(r *http.Request) string {
	vs := r.Header.Values(marker.Header)
	if len(vs) == 0 {
		return record.ClassLive
	}
	if len(vs) == 1 {
		if c, ok := processMarker.Verify(vs[0]); ok {
			if class, known := markedClasses[c]; known {
				r.Header.Del(marker.Header)
				return class
			}
		}
	}
	forgedMarks.Add(1)
	return record.ClassLive
}

// markRequest sets a fresh mark of class on h.
func markRequest(h http.Header, class string) {
	h.Set(marker.Header, processMarker.Sign(class))
}
