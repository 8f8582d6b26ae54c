package main

import (
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/llmtap/llmtap/caddyfile" // the llmtap directive and global option
)

func TestCountEvents(t *testing.T) {
	for _, c := range []struct {
		name string
		prev byte
		p    string
		want int
	}{
		{"one whole event", 0, "data: x\n\n", 1},
		{"two events in one read", 0, "data: x\n\ndata: y\n\n", 2},
		{"blank line split across reads: the second newline starts this read", '\n', "\ndata: y", 1},
		{"a newline ending the previous read alone is not an event", '\n', "data: y\n", 0},
		{"an empty read counts nothing", '\n', "", 0},
	} {
		if got := countEvents([]byte(c.p), c.prev); got != c.want {
			t.Errorf("%s: countEvents(%q, %q) = %d, want %d", c.name, c.p, c.prev, got, c.want)
		}
	}
}

func TestPercentileAndMedian(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for _, c := range []struct {
		name string
		p    float64
		want time.Duration
	}{
		{"p50 of five is the third smallest (nearest rank)", 50, 3},
		{"p99 of five is the largest", 99, 5},
		{"p0 clamps to the smallest", 0, 1},
	} {
		if got := pct(ds, c.p); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	if got := pct(nil, 50); got != 0 {
		t.Errorf("pct of nothing = %v, want 0", got)
	}
	if got := median([]float64{3, math.NaN(), 1, 2}); got != 2 {
		t.Errorf("median skips NaN (direct has no proxy CPU): got %v, want 2", got)
	}
	if got := median([]float64{4, 1}); got != 2.5 {
		t.Errorf("median of an even count averages the middle pair: got %v", got)
	}
}

func TestNum(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{1234567, "1,234,567"},
		{-2048, "-2,048"},
		{12.345, "12.3"},
		{0.5432, "0.543"},
		{math.NaN(), "—"},
	} {
		if got := num(c.v); got != c.want {
			t.Errorf("num(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestCaddyfileDiffersOnlyByTheSnippet(t *testing.T) {
	ups := []upstream{{name: "fast", addr: "127.0.0.1:1"}, {name: "real", addr: "127.0.0.1:2"}}
	sites := map[string]string{"fast": "127.0.0.1:11", "real": "127.0.0.1:12"}
	plain := caddyfile(variant{name: "caddy"}, "/d", "127.0.0.1:19", sites, ups)
	tapped := caddyfile(variant{name: "llmtap", snippet: "llmtap"}, "/d", "127.0.0.1:19", sites, ups)
	if strings.Contains(plain, "llmtap") {
		t.Errorf("plain Caddy's config mentions llmtap:\n%s", plain)
	}
	if got := strings.Count(tapped, "\tllmtap\n"); got != len(ups) {
		t.Errorf("llmtap directive in %d sites, want %d:\n%s", got, len(ups), tapped)
	}
	if strings.ReplaceAll(tapped, "\tllmtap\n", "") != plain {
		t.Errorf("the configs differ beyond the llmtap directive:\n%s\n---\n%s", plain, tapped)
	}
	rec := caddyfile(variant{name: "r", snippet: "llmtap {\n\t\trecord {dir}/rec\n\t}"}, "/x", "a", sites, ups)
	if !strings.Contains(rec, "record /x/rec\n") {
		t.Errorf("{dir} not replaced by the variant's folder:\n%s", rec)
	}
}

func TestProcReaders(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	// Burn a little CPU so that the reading cannot be zero by accident of timing alone.
	x := 0
	for i := range 50_000_000 {
		x += i % 7
	}
	_ = x
	cpu, err := cpuSeconds(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Errorf("cpuSeconds(self) = %v, %v; want > 0 after a busy loop", cpu, err)
	}
	rss, err := rssBytes(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Errorf("rssBytes(self) = %d, %v; a Go test binary holds more than 1 MiB", rss, err)
	}
}

func TestPooledTTFTTakesEveryRepetition(t *testing.T) {
	run := func(ms ...int) measurement {
		var m measurement
		for _, v := range ms {
			m.ttfts = append(m.ttfts, time.Duration(v)*time.Millisecond)
		}
		return m
	}
	r := &report{runs: map[string]map[string][]measurement{"s": {
		// The slow tail sits in one repetition: a per-repetition p99 sees it once, the pooled
		// percentile weighs it against every stream.
		"caddy": {run(1, 2, 3, 4), run(5, 6, 7, 100)},
	}}}
	if got := r.pooledTTFT("s", "caddy", 50); got != 4 {
		t.Errorf("pooled p50 %v ms, want 4", got)
	}
	if got := r.pooledTTFT("s", "caddy", 99); got != 100 {
		t.Errorf("pooled p99 %v ms, want 100", got)
	}
	if got := r.pooledTTFT("s", "llmtap", 50); !math.IsNaN(got) {
		t.Errorf("a variant that did not run: %v, want NaN", got)
	}
}

// TestShadowVariantAdapts: the shadow variant's config names the real upstream's site and is a
// Caddyfile that Caddy, with llmtap's modules, adapts without error or warning.
func TestShadowVariantAdapts(t *testing.T) {
	ups := []upstream{{name: "fast", addr: "127.0.0.1:1"}, {name: "real", addr: "127.0.0.1:2"}}
	sites := map[string]string{"fast": "127.0.0.1:11", "real": "127.0.0.1:12"}
	i := slices.IndexFunc(builtinVariants, func(v variant) bool { return v.name == "llmtap-shadow" })
	if i < 0 {
		t.Fatal("no llmtap-shadow variant")
	}
	cf := caddyfile(builtinVariants[i], "/d", "127.0.0.1:19", sites, ups)
	if !strings.Contains(cf, "url http://127.0.0.1:12/v1/chat/completions\n") || strings.Contains(cf, "{site:") {
		t.Fatalf("the shadow load does not target the real upstream's site:\n%s", cf)
	}
	js, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), map[string]any{"filename": "Caddyfile"})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("adapting: %v %v\n%s", err, warnings, cf)
	}
	if !strings.Contains(string(js), `"rate":20`) {
		t.Errorf("no shadow rate in the adapted config: %s", js)
	}
}

// TestEveryVariantAdapts: each built-in variant's Caddyfile adapts without error or warning,
// so a variant whose options drifted from the parsers fails here, not minutes into a run.
func TestEveryVariantAdapts(t *testing.T) {
	ups := []upstream{{name: "fast", addr: "127.0.0.1:1"}, {name: "real", addr: "127.0.0.1:2"}}
	sites := map[string]string{"fast": "127.0.0.1:11", "real": "127.0.0.1:12"}
	for _, v := range builtinVariants {
		cf := caddyfile(v, "/d", "127.0.0.1:19", sites, ups)
		if _, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), map[string]any{"filename": "Caddyfile"}); err != nil || len(warnings) > 0 {
			t.Errorf("%s: adapting: %v %v\n%s", v.name, err, warnings, cf)
		}
	}
}
