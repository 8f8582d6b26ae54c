package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTogetherRunMeasuresEveryVariant runs the harness itself, briefly, in -together mode:
// the real llmtap binary (built here) as mock and proxies, plain Caddy and Caddy with llmtap
// loaded at the same time, and llmtap again run by a second binary (-base-bin, the way a change
// is measured against its base). Every variant must have served streams in every repetition,
// with TTFTs and proxy CPU read, and the report must say how the runs were made.
func TestTogetherRunMeasuresEveryVariant(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "llmtap")
	build := exec.Command("go", "build", "-o", bin, "github.com/llmtap/llmtap/cmd/llmtap")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building llmtap: %v\n%s", err, out)
	}
	baseBin := filepath.Join(t.TempDir(), "llmtap-base")
	if out, err := exec.Command("cp", bin, baseBin).CombinedOutput(); err != nil {
		t.Fatalf("copying llmtap: %v\n%s", err, out)
	}
	o := options{
		bin: bin, reps: 2, duration: time.Second, warmup: 200 * time.Millisecond, tokens: 16,
		satConc: 8, idleStreams: 10, idleReps: 1, portBase: 19600, together: true,
		scenarios: []string{"stream-64"},
	}
	var err error
	if o.variants, err = variantsNamed(builtinVariants, []string{"caddy", "llmtap", "llmtap@base"}, baseBin); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	md := rep.markdown()
	if got := o.variants[2]; got.name != "llmtap@base" || got.binary(bin) != baseBin || got.snippet != "llmtap" {
		t.Fatalf("llmtap@base resolved to %+v", got)
	}
	for _, v := range []string{"caddy", "llmtap", "llmtap@base"} {
		runs := rep.runs["stream-64"][v]
		if len(runs) != o.reps {
			t.Fatalf("%s: %d repetitions recorded, want %d", v, len(runs), o.reps)
		}
		for i, m := range runs {
			if m.requests == 0 || m.errors != 0 || len(m.ttfts) != m.requests || !(m.cpu > 0) {
				t.Errorf("%s repetition %d: %d requests, %d errors, %d TTFTs, %.3f s CPU", v, i, m.requests, m.errors, len(m.ttfts), m.cpu)
			}
			if m.events != m.requests*(o.tokens+3) { // the tokens, the finish chunk, the usage chunk, [DONE]
				t.Errorf("%s repetition %d: %d events for %d streams of %d tokens", v, i, m.events, m.requests, o.tokens)
			}
		}
	}
	if !strings.Contains(md, "loaded at the same time") || !strings.Contains(md, "| TTFT p99 (ms) |") {
		t.Errorf("report does not describe a together run:\n%s", md)
	}
}

// TestVariantsNamedOnBase: "X@base" is variant X run by the base binary, and refused without one.
func TestVariantsNamedOnBase(t *testing.T) {
	vs, err := variantsNamed(builtinVariants, []string{"caddy", "llmtap@base"}, "/tmp/base")
	if err != nil {
		t.Fatal(err)
	}
	if vs[0].binary("new") != "new" || vs[1].binary("new") != "/tmp/base" || vs[1].snippet != "llmtap" {
		t.Fatalf("variants: %+v", vs)
	}
	if _, err := variantsNamed(builtinVariants, []string{"llmtap@base"}, ""); err == nil {
		t.Fatal("llmtap@base without -base-bin accepted")
	}
	if _, err := variantsNamed(builtinVariants, []string{"nope@base"}, "/tmp/base"); err == nil {
		t.Fatal("an unknown variant on base accepted")
	}
}
