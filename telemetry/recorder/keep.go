package recorder

import "github.com/llmtap/llmtap/telemetry/record"

// Filter is the choice a Recorder with the same Options makes of which records to write:
// routes, models and sampling (Options.Sample, Options.Seed), in that order. Other sinks of the
// same records (the OTLP log export) use it to keep exactly the requests the files keep. It
// is read-only and safe for concurrent use.
type Filter struct{ f *filter }

// NewFilter returns the Filter of o (its zero values read as their defaults).
func NewFilter(o Options) Filter { return Filter{f: newFilter(o.withDefaults())} }

// Keep reports whether a Recorder with these options writes r.
func (f Filter) Keep(r *record.Record) bool { return f.f.keep(r) }
