package recorder

import (
	"strings"
	"testing"
	"time"
)

// TestPayloadSkipsByReason: bodies left out of the payload file are counted by reason, per
// recorder and in the process's totals (issue 35: the skip was shown nowhere).
func TestPayloadSkipsByReason(t *testing.T) {
	t.Parallel()
	large0, notObj0 := ProcessPayloadsSkipped()
	r, _ := open(t, Options{Payloads: true, Records: true, MaxBodyBytes: 64})
	bodies := [][]byte{
		[]byte(`{"model":"m"}`),   // written
		[]byte(`[{"model":"m"}]`), // an array
		[]byte(`{"model":"m",`),   // cut
		nil,                       // empty
		[]byte(`{"model":"m","pad":"` + strings.Repeat("x", 64) + `"}`), // over 64 bytes
	}
	for i, b := range bodies {
		r.Submit(rec(i, time.Now(), b), nil)
	}
	closeRec(t, r)
	st := r.Stats()
	if st.SkippedTooLarge != 1 || st.SkippedNotObject != 3 || st.SkippedPayloads != 4 || st.Written != 5 {
		t.Errorf("stats %+v: want 1 too large, 3 not an object, 4 skipped in all, 5 records written", st)
	}
	if large, notObj := ProcessPayloadsSkipped(); large-large0 < 1 || notObj-notObj0 < 3 {
		t.Errorf("process totals rose by %d too large, %d not an object; want at least 1 and 3", large-large0, notObj-notObj0)
	}
}
