package process

import (
	"net/http"
	"strings"

	"github.com/llmtap/llmtap/internal/keyparse"
	"github.com/llmtap/llmtap/shadow/marker"
	"github.com/llmtap/llmtap/telemetry/record"
)

// newMarker makes the signer of the marker header of llmtap's own traffic (shadow load, trace
// replay) from key (hex or base64); a key that does not parse is reported, and a random key
// used meanwhile.
func newMarker(key string) (*marker.Signer, error) {
	v := strings.TrimSpace(key)
	if v == "" {
		return marker.New(marker.Options{})
	}
	k, err := keyparse.Parse(v, marker.KeyLen, marker.KeyLen)
	if err == nil {
		var s *marker.Signer
		if s, err = marker.New(marker.Options{Key: k}); err == nil {
			return s, nil
		}
	}
	s, _ := marker.New(marker.Options{})
	return s, err
}

// MarkerKeyErr reports why Options.MarkerKey cannot be used, or nil.
func (p *Process) MarkerKeyErr() error { return p.markerErr }

// markedClasses are the classes a verified mark may carry; any other class in a mark that
// verifies (there is none, since only this process signs) would still be live.
var markedClasses = map[string]string{
	record.ClassShadow: record.ClassShadow,
	record.ClassReplay: record.ClassReplay,
	record.ClassMirror: record.ClassMirror,
}

// Classify returns the traffic class of r: the class of a marker header signed with the key,
// unexpired, used for the first time and (when this process minted it) of a load this process
// still has; else live. An accepted mark is removed from r before it goes upstream, so
// upstreams (and their logs) never see one; a refused value is counted by reason and left in
// place, since a live request passes unchanged.
func (p *Process) Classify(r *http.Request) string {
	vs := r.Header.Values(marker.Header)
	if len(vs) == 0 {
		return record.ClassLive
	}
	if len(vs) != 1 {
		p.marks.forged.Add(1)
		return record.ClassLive
	}
	m, res := p.marker.Verify(vs[0])
	if res == marker.OK && p.marker.Own(m) && !p.loadRunning(m.Load) {
		res = marker.Expired
	}
	class, known := markedClasses[m.Class]
	switch {
	case res == marker.OK && known:
		r.Header.Del(marker.Header)
		return class
	case res == marker.Expired:
		p.marks.expired.Add(1)
	case res == marker.Replayed:
		p.marks.replayed.Add(1)
	default:
		p.marks.forged.Add(1)
	}
	return record.ClassLive
}

// loadRunning reports whether a shadow load with that marker load id is configured in this
// process.
func (p *Process) loadRunning(id string) bool {
	for _, r := range p.shadows.Running() {
		if marker.LoadID(r.Name()) == id {
			return true
		}
	}
	return false
}

// Mark sets a fresh mark of class, minted by the load named load, on h.
func (p *Process) Mark(h http.Header, class, load string) {
	h.Set(marker.Header, p.marker.Sign(class, load))
}

// RefusedMarks returns the marks refused since the process started: forged, expired and
// replayed.
func (p *Process) RefusedMarks() (forged, expired, replayed uint64) {
	return p.marks.forged.Load(), p.marks.expired.Load(), p.marks.replayed.Load()
}
