package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/llmtap/llmtap/internal/limits"
)

// Normal is a token-length distribution: normal with the given mean and standard deviation,
// rounded to the nearest integer and clamped to at least 1 (AIPerf's --isl/--isl-stddev and
// --osl/--osl-stddev). A zero Stddev gives the mean every time.
type Normal struct {
	Mean, Stddev float64
}

// Sample draws one length from rng.
func (d Normal) Sample(rng *rand.Rand) int {
	v := d.Mean
	if d.Stddev > 0 {
		v += d.Stddev * rng.NormFloat64()
	}
	v = math.Round(v)
	switch {
	case !(v >= 1): // also NaN
		return 1
	case v > limits.MaxTokens:
		return limits.MaxTokens
	}
	return int(v)
}

// Validate reports a mean or standard deviation that is not a finite number, is negative, or
// is over limits.MaxTokens (a draw is also clamped to it).
func (d Normal) Validate() error {
	var errs []error
	if math.IsNaN(d.Mean) || math.IsInf(d.Mean, 0) || d.Mean < 0 || d.Mean > limits.MaxTokens {
		errs = append(errs, fmt.Errorf("mean %v must be a finite number from 0 to %d (limits.MaxTokens)", d.Mean, limits.MaxTokens))
	}
	if math.IsNaN(d.Stddev) || math.IsInf(d.Stddev, 0) || d.Stddev < 0 || d.Stddev > limits.MaxTokens {
		errs = append(errs, fmt.Errorf("standard deviation %v must be a finite number from 0 to %d (limits.MaxTokens)", d.Stddev, limits.MaxTokens))
	}
	return errors.Join(errs...)
}

// Shape is one input/output length pair of a mix, with its weight.
type Shape struct {
	ISL, OSL Normal
	Weight   float64
}

// Mix draws (input, output) lengths from weighted shapes: AIPerf's --seq-dist.
type Mix struct {
	shapes []Shape
	cum    []float64 // cumulative weights, the last equal to the total
}

// NewMix returns a mix of shapes, which must have positive finite weights.
func NewMix(shapes []Shape) (*Mix, error) {
	if len(shapes) == 0 {
		return nil, errors.New("a length mix needs at least one shape")
	}
	m := &Mix{shapes: shapes}
	total := 0.0
	for i, s := range shapes {
		if !(s.Weight > 0) || math.IsInf(s.Weight, 1) {
			return nil, fmt.Errorf("shape %d: weight %v must be a positive, finite number", i+1, s.Weight)
		}
		if err := errors.Join(s.ISL.Validate(), s.OSL.Validate()); err != nil {
			return nil, fmt.Errorf("shape %d: %w", i+1, err)
		}
		total += s.Weight
		m.cum = append(m.cum, total)
	}
	return m, nil
}

// Sample draws one (input, output) pair: a shape by weight, then each length from it.
func (m *Mix) Sample(rng *rand.Rand) (isl, osl int) {
	u := rng.Float64() * m.cum[len(m.cum)-1]
	i := 0
	for i < len(m.cum)-1 && u >= m.cum[i] {
		i++
	}
	return m.shapes[i].ISL.Sample(rng), m.shapes[i].OSL.Sample(rng)
}

// Shapes returns the mix's shapes.
func (m *Mix) Shapes() []Shape { return m.shapes }

// ParseMix reads AIPerf's --seq-dist syntax: shapes separated by ";", each
// "ISL,OSL:weight" where ISL and OSL are a mean with an optional "|stddev", e.g.
// "128,64:25;512|50,128|10:50;1024,256:25". Weights are relative (they need not add up to
// 100). Every problem is reported.
func ParseMix(s string) (*Mix, error) {
	var shapes []Shape
	var errs []error
	for i, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		sh, err := parseShape(part)
		if err != nil {
			errs = append(errs, fmt.Errorf("shape %d %q: %w", i+1, part, err))
			continue
		}
		shapes = append(shapes, sh)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("parsing sequence distribution: %w", errors.Join(errs...))
	}
	return NewMix(shapes)
}

func parseShape(s string) (Shape, error) {
	lengths, weight, ok := strings.Cut(s, ":")
	if !ok {
		return Shape{}, errors.New("want ISL,OSL:weight")
	}
	in, out, ok := strings.Cut(lengths, ",")
	if !ok {
		return Shape{}, errors.New("want ISL,OSL:weight")
	}
	var sh Shape
	var errs []error
	var err error
	if sh.ISL, err = parseNormal(in); err != nil {
		errs = append(errs, fmt.Errorf("input length: %w", err))
	}
	if sh.OSL, err = parseNormal(out); err != nil {
		errs = append(errs, fmt.Errorf("output length: %w", err))
	}
	if sh.Weight, err = strconv.ParseFloat(strings.TrimSpace(weight), 64); err != nil {
		errs = append(errs, fmt.Errorf("weight %q is not a number", weight))
	}
	return sh, errors.Join(errs...)
}

func parseNormal(s string) (Normal, error) {
	mean, sd, hasSD := strings.Cut(strings.TrimSpace(s), "|")
	var d Normal
	var err error
	if d.Mean, err = strconv.ParseFloat(strings.TrimSpace(mean), 64); err != nil {
		return d, fmt.Errorf("mean %q is not a number", mean)
	}
	if hasSD {
		if d.Stddev, err = strconv.ParseFloat(strings.TrimSpace(sd), 64); err != nil {
			return d, fmt.Errorf("standard deviation %q is not a number", sd)
		}
	}
	return d, d.Validate()
}
