package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// Chart kinds, as ui/static/charts.js draws them.
const (
	KindLine = "line" // points joined by straight lines
	KindStep = "step" // points joined horizontally then vertically (CDFs)
	KindBar  = "bar"  // one bar per point, Bin wide, series side by side
)

// Chart is one chart: what the HTML report hands to charts.js and what the PNG rasterizer
// draws.
type Chart struct {
	ID     string   `json:"id"`
	Title  string   `json:"title"`
	Kind   string   `json:"kind"`
	X      Axis     `json:"x"`
	Y      Axis     `json:"y"`
	Bin    float64  `json:"bin,omitempty"`
	Series []Series `json:"series"`
}

// Axis describes one axis.
type Axis struct {
	Label string `json:"label,omitempty"`
}

// Series is one named line or set of bars.
type Series struct {
	Name string `json:"name"`
	// Dash draws the line dashed (p99 beside a solid p50).
	Dash bool `json:"dash,omitempty"`
	// Color is an index into the palette; series of one group share it.
	Color  int     `json:"-"`
	Points []Point `json:"points"`
}

// Point is one (x, y) pair; a NaN y breaks a line and is written as null.
type Point struct{ X, Y float64 }

// MarshalJSON writes [x, y] with NaN as null.
func (p Point) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	b.WriteString(num(p.X))
	b.WriteByte(',')
	b.WriteString(num(p.Y))
	b.WriteByte(']')
	return b.Bytes(), nil
}

// UnmarshalJSON reads [x, y] with null as NaN.
func (p *Point) UnmarshalJSON(b []byte) error {
	var v [2]*float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = Point{math.NaN(), math.NaN()}
	if v[0] != nil {
		p.X = *v[0]
	}
	if v[1] != nil {
		p.Y = *v[1]
	}
	return nil
}

func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "null"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// MarshalJSON adds the palette color to a series.
func (s Series) MarshalJSON() ([]byte, error) {
	type plain Series
	b, err := json.Marshal(plain(s))
	if err != nil {
		return nil, err
	}
	c, _ := json.Marshal(palette[s.Color%len(palette)].hex)
	return append(append(b[:len(b)-1], `,"color":`...), append(c, '}')...), nil
}
