package trace

import (
	"bytes"
	"strings"
	"testing"
)

// TestMooncakeModel checks the "model" of mooncake lines: read from a line as llmtap's recorder
// writes it (telemetry/recorder appendTrace), written back by MooncakeWriter, and a model that
// is not a string is an error naming the line and the field.
func TestMooncakeModel(t *testing.T) {
	t.Parallel()
	const recorded = `{"timestamp": 0, "input_length": 12, "output_length": 4, "hash_ids": [1], "session_id": "s1", "model": "llama-3"}` + "\n" +
		`{"timestamp": 10.5, "input_length": 7, "output_length": 2, "hash_ids": [2], "model": "qwen\"2"}` + "\n" +
		`{"timestamp": 20, "input_length": 7, "output_length": 2, "hash_ids": [3]}` + "\n"
	reqs, _, err := readAll(t, recorded, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 || reqs[0].Model != "llama-3" || reqs[1].Model != `qwen"2` || reqs[2].Model != "" {
		t.Fatalf("models %q, want llama-3, qwen\"2 and none", []string{reqs[0].Model, reqs[1].Model, reqs[2].Model})
	}
	var out bytes.Buffer
	w := NewMooncakeWriter(&out, WriterOptions{})
	for _, r := range reqs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	back, _, err := readAll(t, out.String(), Options{})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for i := range reqs {
		if back[i].Model != reqs[i].Model {
			t.Errorf("line %d: model %q written back as %q:\n%s", i+1, reqs[i].Model, back[i].Model, out.String())
		}
	}
	if strings.Count(out.String(), `"model"`) != 2 {
		t.Errorf("a request without a model must not get one:\n%s", out.String())
	}
	if _, _, err := readAll(t, `{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [], "model": 7}`+"\n", Options{}); err == nil ||
		!strings.Contains(err.Error(), "traces/x:1: model") {
		t.Errorf("a numeric model: %v, want an error naming line 1 and the field", err)
	}
}
