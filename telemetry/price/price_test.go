package price

import (
	"math"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/telemetry/record"

	"github.com/llmtap/llmtap/internal/limits"
)

func ptr(v float64) *float64 { return &v }

// TestCost prices records by kind: uncached input at the input price, cached and cache-write
// input at theirs (the input price when not given), output with reasoning at the output price;
// the first matching entry wins, a plain name is compared as is and a pattern by path.Match.
func TestCost(t *testing.T) {
	t.Parallel()
	tbl, err := Compile([]List{
		{Model: "gpt-4o-mini", Input: 0.15, Output: 0.60, CachedInput: ptr(0.075)},
		{Model: "claude-*", Input: 3, Output: 15, CachedInput: ptr(0.30), CacheWrite: ptr(3.75)},
		{Model: "gpt-*", Input: 2.5, Output: 10},
		{Model: "meta-llama/*", Input: 0.1, Output: 0.2},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name                                string
		model                               string
		in, cached, written, out, reasoning int64
		want                                float64 // nan: no cost
	}{
		{"name, cached at its price", "gpt-4o-mini", 1000, 400, 0, 200, 50, (600*0.15 + 400*0.075 + 200*0.60) / 1e6},
		{"pattern, every kind", "claude-sonnet-4", 1000, 300, 200, 100, 0, (500*3 + 300*0.30 + 200*3.75 + 100*15) / 1e6},
		{"later pattern, cached at the input price", "gpt-4o", 1000, 400, 0, 10, 0, (1000*2.5 + 10*10) / 1e6},
		{"reasoning is output", "gpt-5", 0, 0, 0, 100, 90, 100 * 10 / 1e6},
		{"star stops at a slash", "meta-llama/Llama-3.1-8B", 10, 0, 0, 10, 0, (10*0.1 + 10*0.2) / 1e6},
		{"no match", "meta-llama/x/y", 10, 0, 0, 10, 0, math.NaN()},
		{"name is not a prefix", "gpt-4o-mini-2", 10, 0, 0, 10, 0, (10*2.5 + 10*10) / 1e6},
		{"cached above input is clamped", "gpt-4o-mini", 10, 50, 0, 0, 0, 10 * 0.075 / 1e6},
		{"negative counts read as 0", "gpt-4o", -5, -1, -1, -3, 0, 0},
	} {
		r := &record.Record{Model: c.model, InputTokens: c.in, CachedTokens: c.cached, CacheWriteTokens: c.written,
			OutputTokens: c.out, ReasoningTokens: c.reasoning}
		got := tbl.Cost(r)
		if math.IsNaN(c.want) {
			if got != nil {
				t.Errorf("%s: cost %+v, want none", c.name, got)
			}
			continue
		}
		if got == nil || math.Abs(got.Total-c.want) > 1e-15 || got.Basis != record.BasisListPrice {
			t.Errorf("%s: cost %+v, want %g list_price", c.name, got, c.want)
			continue
		}
		if n := max(c.in, 0) + max(c.out, 0); n > 0 && math.Abs(got.PerMillionTokens-c.want/float64(n)*1e6) > 1e-12 {
			t.Errorf("%s: per million %g, want %g", c.name, got.PerMillionTokens, c.want/float64(n)*1e6)
		}
	}
	var p Prices
	r := &record.Record{Model: "gpt-4o", InputTokens: 1}
	p.Enrich(r)
	if r.ListCost != nil {
		t.Error("no table priced a record")
	}
	p.Set(tbl)
	if p.Enrich(r); r.ListCost == nil {
		t.Error("the table in use did not price a record")
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		ls   []List
		want string
	}{
		{[]List{{Model: ""}}, "empty"},
		{[]List{{Model: "[x"}}, "malformed"},
		{[]List{{Model: strings.Repeat("m", 129)}}, "longer than 128 bytes"},
		{[]List{{Model: "m", Input: -1}}, "input must be a number from 0 to 1e+06 (limits.MaxPrice)"},
		{[]List{{Model: "m", Output: math.Inf(1)}}, "output must be a number from 0 to 1e+06"},
		{[]List{{Model: "m", CachedInput: ptr(math.NaN())}}, "cached_input must be a number from 0 to 1e+06"},
		{[]List{{Model: "m", CacheWrite: ptr(-2)}}, "cache_write must be a number from 0 to 1e+06"},
		{[]List{{Model: "m", Input: 1e308}}, "input must be a number from 0 to 1e+06 (limits.MaxPrice)"},
		{[]List{{Model: "m"}, {Model: "m"}}, `list price 1 (model "m"): the model is given twice`},
		{make([]List, MaxEntries+1), "at most 1024"},
	} {
		if _, err := Compile(c.ls); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Compile(%.40v) = %v, want an error containing %q", c.ls, err, c.want)
		}
	}
	if tbl, err := Compile(nil); tbl != nil || err != nil || tbl.Cost(&record.Record{Model: "m"}) != nil {
		t.Errorf("an empty list: %v, %v", tbl, err)
	}
}

// FuzzCost: whatever the pattern, model and counts, a table that compiles prices a record
// with a finite non-negative cost or not at all, and an exact name matches only itself.
func FuzzCost(f *testing.F) {
	f.Add("gpt-*", "gpt-4o", int64(100), int64(20), int64(5), int64(30))
	f.Add("a[b-c]?", "abz", int64(-1), int64(-1), int64(-1), int64(-1))
	f.Add("m", "m", int64(math.MaxInt64), int64(math.MaxInt64), int64(0), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, pattern, model string, in, cached, written, out int64) {
		tbl, err := Compile([]List{{Model: pattern, Input: 1, Output: 2, CachedInput: ptr(0.5), CacheWrite: ptr(1.25)}})
		if err != nil {
			return
		}
		c := tbl.Cost(&record.Record{Model: model, InputTokens: in, CachedTokens: cached, CacheWriteTokens: written, OutputTokens: out})
		if c != nil && (!(c.Total >= 0) || math.IsInf(c.Total, 0) || math.IsNaN(c.PerMillionTokens)) {
			t.Errorf("pattern %q model %q: cost %+v", pattern, model, c)
		}
		if !strings.ContainsAny(pattern, `*?[\`) && (c != nil) != (pattern == model) {
			t.Errorf("plain name %q, model %q: priced %v", pattern, model, c != nil)
		}
	})
}

// TestMaxPriceStaysFinite: at limits.MaxPrice for every kind of token and the largest counts
// a record can carry, a request's cost is finite, and so is the sum of a billion of them.
func TestMaxPriceStaysFinite(t *testing.T) {
	t.Parallel()
	top := float64(limits.MaxPrice)
	tbl, err := Compile([]List{{Model: "m", Input: top, Output: top, CachedInput: ptr(top), CacheWrite: ptr(top)}})
	if err != nil {
		t.Fatal(err)
	}
	c := tbl.Cost(&record.Record{Model: "m", InputTokens: math.MaxInt64, CachedTokens: math.MaxInt64 / 2, CacheWriteTokens: math.MaxInt64 / 4, OutputTokens: math.MaxInt64})
	if c == nil || math.IsInf(c.Total*1e9, 0) || math.IsNaN(c.Total) {
		t.Fatalf("cost %+v", c)
	}
}
