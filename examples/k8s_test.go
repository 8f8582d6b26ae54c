package examples

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

// TestIndexedJobSplitsTheBench decodes k8s/bench-indexed-job.yaml into Kubernetes' own Job type
// (unknown fields refused, so a misspelt field fails here rather than in a cluster) and checks
// what splitting a bench across its pods needs: an Indexed Job whose parallelism and completions
// both equal the worker count it passes as LLMTAP_WORKER_COUNT (every worker runs at once, and
// Kubernetes does not set the count), each pod's own artifact folder named by its index, and a
// shared start time.
func TestIndexedJobSplitsTheBench(t *testing.T) {
	var job *batchv1.Job
	for _, doc := range yamlDocs(t, "k8s/bench-indexed-job.yaml") {
		if doc["kind"] != "Job" {
			continue
		}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		job = new(batchv1.Job)
		if err := dec.Decode(job); err != nil {
			t.Fatalf("the Job does not decode as batch/v1 Job: %v", err)
		}
	}
	if job == nil {
		t.Fatal("no Job in k8s/bench-indexed-job.yaml")
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v, want Indexed (JOB_COMPLETION_INDEX is set only then)", s.CompletionMode)
	}
	if len(s.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want the bench alone", len(s.Template.Spec.Containers))
	}
	c := s.Template.Spec.Containers[0]
	count := -1
	for _, e := range c.Env {
		if e.Name == "LLMTAP_WORKER_COUNT" {
			count, _ = strconv.Atoi(e.Value)
		}
	}
	if count < 2 {
		t.Fatalf("LLMTAP_WORKER_COUNT %d: want the worker count, 2 or more", count)
	}
	if s.Parallelism == nil || s.Completions == nil || int(*s.Parallelism) != count || int(*s.Completions) != count {
		t.Errorf("parallelism %v and completions %v, want both %d (LLMTAP_WORKER_COUNT)", s.Parallelism, s.Completions, count)
	}
	if !slices.Equal(c.Command, []string{"llmtap", "bench"}) {
		t.Errorf("command %v", c.Command)
	}
	for _, want := range []string{"--artifact-dir=/results/worker-$(JOB_COMPLETION_INDEX)", "--start-at=$(START_AT)"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	if slices.ContainsFunc(c.Args, func(a string) bool { return len(a) > 14 && a[:14] == "--worker-count" }) {
		t.Error("the worker count is passed twice: LLMTAP_WORKER_COUNT is the one source")
	}
}
