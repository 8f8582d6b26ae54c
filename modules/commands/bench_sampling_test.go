package commands

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/llmtap/llmtap/load/workload"
)

// TestBenchDatasetSamplingAtTheServer checks --dataset-sampling-strategy at the server, one
// request at a time so that the arrival order is the send order: over a synthetic pool of 4
// prompts and 12 requests, sequential sends the pool in order three times; shuffle sends each
// pass of 4 as a permutation of the pool, a new one per pass; random draws with replacement
// (some pass repeats a prompt); each order is the seeded strategy's and the same again with
// the same seed; the default is shuffle for synthetic prompts and sequential for a
// single_turn file, as in AIPerf.
func TestBenchDatasetSamplingAtTheServer(t *testing.T) {
	const seed, pool, count = 7, 4, 12
	prompts := func(t *testing.T, extra ...string) []string {
		t.Helper()
		log, url := loggedMock(t)
		args := append([]string{"--url", url, "--model", "mock-model", "--concurrency", "1", "--isl", "12", "--osl", "2",
			"--random-seed", "7", "--request-count", "12", "--num-dataset-entries", "4", "--artifact-dir", t.TempDir()}, extra...)
		code, out, _, _ := runBenchArgs(t, args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		var ps []string
		for _, e := range loggedEntries(t, log) {
			ps = append(ps, e.text[len(e.text)-1])
		}
		if len(ps) != count {
			t.Fatalf("%d requests at the server, want %d", len(ps), count)
		}
		return ps
	}
	// The pool in its order: sequential sends it as built.
	seq := prompts(t, "--dataset-sampling-strategy", "sequential")
	entries := seq[:pool]
	for i, p := range seq {
		if p != entries[i%pool] {
			t.Fatalf("sequential: request %d sent %.30q, want pool entry %d", i, p, i%pool)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(entries)))) != pool {
		t.Fatalf("sequential: the first %d requests are not %d distinct prompts", pool, pool)
	}
	index := func(p string) int { return slices.Index(entries, p) }
	expect := func(strategy string) []int {
		s, err := workload.NewSampler(strategy, "", pool, seed)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]int, count)
		for i := range out {
			out[i] = s.Index(i)
		}
		return out
	}
	order := func(ps []string) []int {
		out := make([]int, len(ps))
		for i, p := range ps {
			out[i] = index(p)
		}
		return out
	}

	shuf := order(prompts(t, "--dataset-sampling-strategy", "shuffle"))
	passes := map[string]bool{}
	for k := 0; k < count; k += pool {
		pass := slices.Clone(shuf[k : k+pool])
		passes[fmt.Sprint(pass)] = true
		if slices.Sort(pass); !slices.Equal(pass, []int{0, 1, 2, 3}) {
			t.Errorf("shuffle: pass %d sent pool entries %v, want each entry once", k/pool, shuf[k:k+pool])
		}
	}
	if len(passes) < 2 || !slices.Equal(shuf, expect("shuffle")) {
		t.Errorf("shuffle sent %v (%d distinct passes): want a new order per pass, the seeded %v", shuf, len(passes), expect("shuffle"))
	}
	if def := order(prompts(t)); !slices.Equal(def, shuf) {
		t.Errorf("no strategy sent %v, want the synthetic default, shuffle: %v", def, shuf)
	}

	rnd := order(prompts(t, "--dataset-sampling-strategy", "random"))
	repeats := false
	for k := 0; k < count; k += pool {
		pass := slices.Sorted(slices.Values(rnd[k : k+pool]))
		repeats = repeats || len(slices.Compact(pass)) < pool
	}
	if !repeats || slices.Contains(rnd, -1) || !slices.Equal(rnd, expect("random")) {
		t.Errorf("random sent %v: want draws with replacement (some pass repeats an entry), the seeded %v", rnd, expect("random"))
	}
	if again := order(prompts(t, "--dataset-sampling-strategy", "random")); !slices.Equal(again, rnd) {
		t.Errorf("random with the same seed sent %v, then %v", rnd, again)
	}

	// A single_turn file: sequential by default (the file's order), shuffled on request.
	f := filepath.Join(t.TempDir(), "rows.jsonl")
	if err := os.WriteFile(f, []byte("{\"text\": \"row 0\"}\n{\"text\": \"row 1\"}\n{\"text\": \"row 2\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rows := func(ps []string) []int {
		out := make([]int, len(ps))
		for i, p := range ps {
			out[i] = int(p[len(p)-1] - '0')
		}
		return out
	}
	file := []string{"--input-file", f, "--custom-dataset-type", "single_turn"}
	if got := rows(prompts(t, file...)); !slices.Equal(got, []int{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}) {
		t.Errorf("single_turn by default sent rows %v, want the file's order", got)
	}
	s, _ := workload.NewSampler("shuffle", workload.DatasetSingleTurn, 3, seed)
	var want []int
	for i := range count {
		want = append(want, s.Index(i))
	}
	if got := rows(prompts(t, append(file, "--dataset-sampling-strategy", "shuffle")...)); !slices.Equal(got, want) || slices.Equal(got, []int{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}) {
		t.Errorf("single_turn shuffled sent rows %v, want the seeded shuffle %v", got, want)
	}
	if code, _, _, _ := runBenchArgs(t, "--url", "http://127.0.0.1:1", "--model", "m", "--concurrency", "1", "--dataset-sampling-strategy", "sorted"); code != 2 {
		t.Errorf("--dataset-sampling-strategy sorted: exit %d, want 2", code)
	}
}
