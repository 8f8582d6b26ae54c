package recorder

import (
	"path"
	"strings"

	"github.com/llmtap/llmtap/internal/sample"
	"github.com/llmtap/llmtap/telemetry/record"
)

// filter decides which records are written: routes, models and sampling, in that order. It is
// read-only after construction and safe for concurrent use.
type filter struct {
	routes []string
	models []string
	coin   sample.Coin
	all    bool
}

func newFilter(o Options) *filter {
	return &filter{routes: o.Routes, models: o.Models, all: o.Sample >= 1, coin: sample.New(o.Sample, o.Seed)}
}

// keep reports whether r is to be written.
func (f *filter) keep(r *record.Record) bool {
	if len(f.routes) > 0 && !f.route(r.Path) {
		return false
	}
	if len(f.models) > 0 && !f.model(r.Model) {
		return false
	}
	if f.all {
		return true
	}
	if r.SessionID != "" {
		return f.sample(r.SessionID) // whole sessions
	}
	return f.sample(r.RequestID)
}

func (f *filter) route(p string) bool {
	for _, prefix := range f.routes {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

func (f *filter) model(m string) bool {
	for _, pat := range f.models {
		if ok, _ := path.Match(pat, m); ok {
			return true
		}
	}
	return false
}

// sample is a stateless coin on the id (the session's, else the request's) and the seed (see
// internal/sample).
func (f *filter) sample(id string) bool { return f.coin.Keep(id) }
