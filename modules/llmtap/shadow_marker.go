package llmtap

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmtap/llmtap/internal/keyparse"
	"github.com/llmtap/llmtap/shadow/marker"
	"github.com/llmtap/llmtap/telemetry/record"
)

// MarkerKeyEnv names the environment variable that gives the shadow marker's key: 32 bytes in
// hex (64 digits) or base64. Instances of a fleet that share it accept each other's marks
// (a shadow load on one instance whose requests a load balancer sends to another). Unset, the
// key is drawn from crypto/rand once per process and never leaves it.
const MarkerKeyEnv = "LLMTAP_MARKER_KEY"

// processMarker signs the marker header of llmtap's own traffic (shadow load, trace replay);
// made on first use from MarkerKeyEnv. A key that does not parse fails the provisioning of
// every llmtap handler (Handler.Provision); until then a random key is used.
var processMarker = sync.OnceValues(func() (*marker.Signer, error) {
	v := strings.TrimSpace(os.Getenv(MarkerKeyEnv))
	if v == "" {
		return marker.New(marker.Options{})
	}
	key, err := parseMarkerKey(v)
	if err == nil {
		var s *marker.Signer
		if s, err = marker.New(marker.Options{Key: key}); err == nil {
			return s, nil
		}
	}
	s, _ := marker.New(marker.Options{})
	return s, fmt.Errorf("%s: %w", MarkerKeyEnv, err)
})

// parseMarkerKey decodes a key given as hex or base64 (standard or URL alphabet, padded or not).
func parseMarkerKey(v string) ([]byte, error) { return keyparse.Parse(v, marker.KeyLen, marker.KeyLen) }

// markerKeyError reports why MarkerKeyEnv cannot be used, or nil.
func markerKeyError() error {
	_, err := processMarker()
	return err
}

// markedClasses are the classes a verified mark may carry; any other class in a mark that
// verifies (there is none, since only this process signs) would still be live.
var markedClasses = map[string]string{
	record.ClassShadow: record.ClassShadow,
	record.ClassReplay: record.ClassReplay,
	record.ClassMirror: record.ClassMirror,
}

// Refused marks (proc.marks), by reason: forged (not signed with the key), expired (past their
// few seconds, or minted by a load this process no longer has) and replayed (genuine,
// unexpired, already used once).
var (
	metricForged = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "llmtap_shadow_marker_forged_total",
		Help: "Requests that carried the Llmtap-Shadow header with a value not signed with the marker key; they were measured as live traffic.",
	}, func() float64 { return float64(proc.marks.forged.Load()) })
	metricMarkExpired = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "llmtap_shadow_marker_expired_total",
		Help: "Requests that carried a genuine Llmtap-Shadow mark past its expiry, or of a load this process no longer has; they were measured as live traffic.",
	}, func() float64 { return float64(proc.marks.expired.Load()) })
	metricMarkReplayed = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "llmtap_shadow_marker_replayed_total",
		Help: "Requests that carried a genuine, unexpired Llmtap-Shadow mark that had already been used; they were measured as live traffic.",
	}, func() float64 { return float64(proc.marks.replayed.Load()) })
)

// classify returns the traffic class of r: the class of a marker header signed with the key,
// unexpired, used for the first time and (when this process minted it) of a load this process
// still has; else live. An accepted mark is removed from r before it goes upstream, so
// upstreams (and their logs) never see one; a refused value is counted by reason and left in
// place, since a live request passes unchanged.
func classify(r *http.Request) string {
	vs := r.Header.Values(marker.Header)
	if len(vs) == 0 {
		return record.ClassLive
	}
	if len(vs) != 1 {
		proc.marks.forged.Add(1)
		return record.ClassLive
	}
	s, _ := processMarker()
	m, res := s.Verify(vs[0])
	if res == marker.OK && s.Own(m) && !loadRunning(m.Load) {
		res = marker.Expired
	}
	class, known := markedClasses[m.Class]
	switch {
	case res == marker.OK && known:
		r.Header.Del(marker.Header)
		return class
	case res == marker.Expired:
		proc.marks.expired.Add(1)
	case res == marker.Replayed:
		proc.marks.replayed.Add(1)
	default:
		proc.marks.forged.Add(1)
	}
	return record.ClassLive
}

// loadRunning reports whether a shadow load with that marker load id is configured in this
// process.
func loadRunning(id string) bool {
	for _, r := range proc.shadows.Running() {
		if marker.LoadID(r.Name()) == id {
			return true
		}
	}
	return false
}

// markRequest sets a fresh mark of class, minted by the load named load, on h.
func markRequest(h http.Header, class, load string) {
	s, _ := processMarker()
	h.Set(marker.Header, s.Sign(class, load))
}
