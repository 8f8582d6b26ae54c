// Package price gives a request its cost at a model's list prices: the price per million
// tokens of each kind a provider publishes (input, cached input, cache write, output), matched
// to the record's model by name or pattern. It is the "list_price" basis of record.Cost; the
// "gpu_hour" basis (GPU-seconds at a price per GPU-hour) is telemetry/timeline's.
//
// A table is checked once, when the configuration loads; matching a model is a scan of the
// table's entries (a string comparison for a plain name, path.Match for a pattern; model names
// are at most 128 bytes), done once per record off the request path (a record pipeline
// enricher), never per token.
package price

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync/atomic"

	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"

	"github.com/llmtap/llmtap/internal/limits"
)

// MaxEntries bounds a table: patterns are scanned for every record.
const MaxEntries = 1024

// List is the list prices of the models one pattern matches, per million tokens, in any
// currency unit (the same for every entry and, to be compared, the price per GPU-hour).
type List struct {
	// Model is the model name the prices apply to, as records name it (the response's model,
	// else the request's), or a pattern in path.Match syntax, as record and slo model
	// selectors: "gpt-4o*", "meta-llama/*" ("*" does not cross a "/"). Entries are tried in
	// order and the first match wins, so list a model before a pattern that also matches it.
	// Required, at most 128 bytes.
	Model string `json:"model"`
	// Input is the price of a million input (prompt) tokens that were neither read from nor
	// written to the server's prompt cache. Required (0 for free).
	Input float64 `json:"input"`
	// Output is the price of a million output tokens, reasoning tokens included (a server
	// bills reasoning as output). Required (0 for free).
	Output float64 `json:"output"`
	// CachedInput is the price of a million input tokens read from the prompt cache
	// (the record's cached_tokens). Default: Input.
	CachedInput *float64 `json:"cached_input,omitempty"`
	// CacheWrite is the price of a million input tokens written to the prompt cache (the
	// record's cache_write_tokens, which Anthropic reports). Default: Input.
	CacheWrite *float64 `json:"cache_write,omitempty"`
}

// entry is one compiled List: its pattern and its four prices.
type entry struct {
	pattern                           string
	exact                             bool // no special character: a name compared as is
	input, cached, cacheWrite, output float64
}

// match reports whether model matches e's pattern.
func (e *entry) match(model string) bool {
	if e.exact {
		return model == e.pattern
	}
	ok, _ := path.Match(e.pattern, model)
	return ok
}

// Table is a compiled list of prices. A nil *Table prices nothing.
type Table struct{ entries []entry }

// Check reports what is wrong with l: an empty, malformed or over-long (128 bytes) model
// pattern, a price that is not a finite non-negative number.
func (l *List) Check() error {
	var errs []error
	switch {
	case l.Model == "":
		errs = append(errs, errors.New("the model name or pattern is empty"))
	case len(l.Model) > labelcap.MaxLen:
		errs = append(errs, fmt.Errorf("the model name or pattern is longer than %d bytes", labelcap.MaxLen))
	}
	if _, err := path.Match(l.Model, ""); err != nil {
		errs = append(errs, fmt.Errorf("the pattern is malformed: %v", err))
	}
	for _, p := range [...]struct {
		name string
		v    *float64
	}{{"input", &l.Input}, {"output", &l.Output}, {"cached_input", l.CachedInput}, {"cache_write", l.CacheWrite}} {
		if p.v != nil && !(*p.v >= 0 && *p.v <= limits.MaxPrice) {
			errs = append(errs, fmt.Errorf("%s must be a number from 0 to %g (limits.MaxPrice), got %v", p.name, float64(limits.MaxPrice), *p.v))
		}
	}
	return errors.Join(errs...)
}

// Compile checks ls (each entry, at most MaxEntries of them, no model given twice) and
// compiles it; it returns nil for an empty list.
func Compile(ls []List) (*Table, error) {
	if len(ls) == 0 {
		return nil, nil
	}
	if len(ls) > MaxEntries {
		return nil, fmt.Errorf("%d list prices: at most %d", len(ls), MaxEntries)
	}
	t := &Table{entries: make([]entry, 0, len(ls))}
	seen := map[string]bool{}
	var errs []error
	for i, l := range ls {
		err := l.Check()
		if seen[l.Model] {
			err = errors.Join(err, errors.New("the model is given twice"))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("list price %d (model %q): %w", i, l.Model, err))
			continue
		}
		seen[l.Model] = true
		e := entry{pattern: l.Model, exact: !strings.ContainsAny(l.Model, `*?[\`),
			input: l.Input, output: l.Output, cached: l.Input, cacheWrite: l.Input}
		if l.CachedInput != nil {
			e.cached = *l.CachedInput
		}
		if l.CacheWrite != nil {
			e.cacheWrite = *l.CacheWrite
		}
		t.entries = append(t.entries, e)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// Cost is r's cost at the list prices of the first entry matching its model, nil when none
// matches (or t is nil): its uncached input tokens (input less cached and cache-write) at the
// input price, cached and cache-write tokens at theirs, output tokens (reasoning included) at
// the output price; PerMillionTokens is that over its input and output tokens. Negative
// counts read as 0.
func (t *Table) Cost(r *record.Record) *record.Cost {
	if t == nil {
		return nil
	}
	for i := range t.entries {
		if e := &t.entries[i]; e.match(r.Model) {
			in, out := max(r.InputTokens, 0), max(r.OutputTokens, 0)
			cached, written := min(max(r.CachedTokens, 0), in), max(r.CacheWriteTokens, 0)
			written = min(written, in-cached)
			total := (float64(in-cached-written)*e.input + float64(cached)*e.cached +
				float64(written)*e.cacheWrite + float64(out)*e.output) / 1e6
			return record.NewCost(total, record.BasisListPrice, in+out)
		}
	}
	return nil
}

// Prices holds the table in use, replaced whole when a configuration loads; safe for
// concurrent use.
type Prices struct{ t atomic.Pointer[Table] }

// Set makes t the table in use (nil: no list prices).
func (p *Prices) Set(t *Table) { p.t.Store(t) }

// Enrich gives r its cost at list prices (record.ListCost) when its model has them; it is a
// record pipeline enricher, run after the record's token counts and model are final.
func (p *Prices) Enrich(r *record.Record) {
	if c := p.t.Load().Cost(r); c != nil {
		r.ListCost = c
	}
}
