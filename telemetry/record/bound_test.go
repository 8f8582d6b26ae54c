package record

import (
	"strings"
	"testing"
)

// TestBoundStrings: every client- or upstream-supplied string is cut to its bound, two long
// values stay apart, and short ones are untouched.
func TestBoundStrings(t *testing.T) {
	long := strings.Repeat("v", 500<<10)
	r := Record{Model: long + "1", RequestModel: long + "2", Finish: long, API: "openai.chat", RequestID: long,
		Path: "/" + long, ErrorMsg: long, SessionID: long, Class: ClassLive}
	r.BoundStrings()
	for name, got := range map[string]struct {
		v   string
		max int
	}{
		"model": {r.Model, MaxLabelLen}, "request model": {r.RequestModel, MaxLabelLen}, "finish": {r.Finish, MaxLabelLen},
		"request id": {r.RequestID, MaxIDLen}, "path": {r.Path, MaxPathLen}, "error message": {r.ErrorMsg, MaxMessageLen},
		"session id": {r.SessionID, MaxIDLen},
	} {
		if len(got.v) > got.max || len(got.v) < got.max/2 {
			t.Errorf("%s: %d bytes, want at most %d (and the start of the value)", name, len(got.v), got.max)
		}
	}
	if r.Model == r.RequestModel {
		t.Error("two long models that differ at the end got the same value")
	}
	if r.API != "openai.chat" || r.Class != ClassLive {
		t.Errorf("short values changed: %q %q", r.API, r.Class)
	}
}
