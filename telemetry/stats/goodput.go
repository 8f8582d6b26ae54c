package stats

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/llmtap/llmtap/telemetry/record"
)

// SLO is one service-level objective of goodput: a per-request metric and its threshold in
// the metric's display unit (ms for times, tokens/sec for throughputs, tokens for counts).
// A request meets it when its value is ≤ Threshold, or ≥ Threshold for the metrics where
// larger is better (output_token_throughput_per_user, e2e_output_token_throughput).
type SLO struct {
	Metric    string  `json:"metric"`
	Threshold float64 `json:"threshold"`
}

// String writes the SLO as the comparison it stands for, e.g. "time_to_first_token<=100".
func (s SLO) String() string {
	op := "<="
	if m, ok := metricByTag(s.Metric); ok && specs[m].largerIsBetter {
		op = ">="
	}
	return s.Metric + op + strconv.FormatFloat(s.Threshold, 'g', -1, 64)
}

// ParseSLOs reads goodput objectives in AIPerf's --goodput syntax: "metric:value" pairs
// separated by spaces or commas, e.g. "time_to_first_token:100 inter_token_latency:3.4".
// The metric is a per-request metric tag (every distribution metric except the per-chunk
// inter_chunk_latency); the value is a finite, non-negative number in the metric's display
// unit. Every problem is reported, joined into one error. An empty string means no SLOs.
func ParseSLOs(s string) ([]SLO, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	var out []SLO
	var errs []error
	seen := map[string]bool{}
	for _, f := range fields {
		tag, val, ok := strings.Cut(f, ":")
		if !ok {
			errs = append(errs, fmt.Errorf("goodput objective %q: want metric:value", f))
			continue
		}
		m, known := metricByTag(tag)
		switch {
		case !known:
			errs = append(errs, fmt.Errorf("goodput objective %q: unknown metric %q (known: %s)", f, tag, strings.Join(sloTags(), ", ")))
			continue
		case specs[m].list:
			errs = append(errs, fmt.Errorf("goodput objective %q: %s has many values per request and cannot be an objective", f, tag))
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("goodput objective %q: value %q is not a number", f, val))
			continue
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
			errs = append(errs, fmt.Errorf("goodput objective %q: value must be a finite number ≥ 0", f))
			continue
		case seen[tag]:
			errs = append(errs, fmt.Errorf("goodput objective %q: %s is given twice", f, tag))
			continue
		}
		seen[tag] = true
		out = append(out, SLO{Metric: tag, Threshold: v})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("parsing goodput objectives: %w", errors.Join(errs...))
	}
	return out, nil
}

// sloTags lists the metric tags an SLO may name.
func sloTags() []string {
	var tags []string
	for i := range specs {
		if !specs[i].list {
			tags = append(tags, specs[i].tag)
		}
	}
	return tags
}

// Good reports whether a request meets every SLO (DistServe's definition of goodput, as in
// AIPerf). A failed request is never good, and neither is one that lacks the value an SLO
// needs (a non-streaming request has no TTFT, a one-token answer no ITL): the objective
// cannot be shown to hold, and goodput must not overstate. Unknown metrics fail as well.
func Good(r *record.Record, slos []SLO) bool {
	if !r.OK() {
		return false
	}
	vs := extract(r)
	return meets(&vs, resolve(slos))
}

// objective is an SLO with its metric looked up once.
type objective struct {
	m         metric
	known     bool
	threshold float64
}

func resolve(slos []SLO) []objective {
	objs := make([]objective, len(slos))
	for i, s := range slos {
		m, ok := metricByTag(s.Metric)
		objs[i] = objective{m: m, known: ok && !specs[m].list, threshold: s.Threshold}
	}
	return objs
}

func meets(vs *values, objs []objective) bool {
	for _, o := range objs {
		if !o.known || !vs.has[o.m] {
			return false
		}
		v := vs.v[o.m]
		if specs[o.m].largerIsBetter {
			if !(v >= o.threshold) {
				return false
			}
		} else if !(v <= o.threshold) {
			return false
		}
	}
	return true
}

// MeetsEach reports in met, for each SLO in turn, whether the request meets that SLO alone, with
// Good's rules (a failed request or a missing value meets none), and returns whether it meets
// all of them. met must have len(slos) elements.
func MeetsEach(r *record.Record, slos []SLO, met []bool) (good bool) {
	good = r.OK()
	var vs values
	if good {
		vs = extract(r)
	}
	for i, o := range resolve(slos) {
		met[i] = good && meets(&vs, []objective{o})
	}
	for _, m := range met {
		good = good && m
	}
	return good
}
