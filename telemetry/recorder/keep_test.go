package recorder

import (
	"fmt"
	"testing"

	"github.com/llmtap/llmtap/telemetry/record"
)

// TestFilterKeepsWhatTheRecorderWrites: Filter, given the options a Recorder was given (zero
// values included: Sample 0 means all), keeps exactly the records that Recorder writes.
func TestFilterKeepsWhatTheRecorderWrites(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{
		{Dir: t.TempDir(), Records: true},
		{Dir: t.TempDir(), Records: true, Sample: 0.3, Seed: 7, Routes: []string{"/v1/chat"}, Models: []string{"llama-*"}},
	} {
		rec, err := newRecorder(o)
		if err != nil {
			t.Fatal(err)
		}
		f := NewFilter(o)
		kept := 0
		for i := range 400 {
			r := &record.Record{RequestID: fmt.Sprint("req-", i), Path: []string{"/v1/chat/completions", "/v1/embeddings"}[i%2],
				Model: []string{"llama-3", "mistral"}[i/2%2]}
			if got, want := f.Keep(r), rec.filter.keep(r); got != want {
				t.Fatalf("options %+v, record %s: Filter.Keep %v, the recorder %v", o, r.RequestID, got, want)
			}
			if f.Keep(r) {
				kept++
			}
		}
		if o.Sample == 0 && kept != 400 {
			t.Errorf("zero options kept %d of 400 records, want all", kept)
		}
		if o.Sample > 0 && (kept == 0 || kept >= 100) {
			t.Errorf("a 30%% sample of the 100 matching records kept %d", kept)
		}
	}
}
