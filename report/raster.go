package report

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// paletteColor is one series color, as hex for the HTML and as RGBA for PNGs.
type paletteColor struct {
	hex string
	c   color.RGBA
}

func rgb(hex string) paletteColor {
	v, _ := strconv.ParseUint(hex[1:], 16, 32)
	return paletteColor{hex, color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255}}
}

// palette is the dashboard's palette (ui/static/charts.js), so a group has the same color in
// the report's HTML and PNGs.
var palette = []paletteColor{
	rgb("#2563eb"), rgb("#dc2626"), rgb("#16a34a"), rgb("#9333ea"), rgb("#ea580c"),
	rgb("#0891b2"), rgb("#ca8a04"), rgb("#db2777"), rgb("#4b5563"), rgb("#65a30d"),
}

// The plot's margins in pixels, as in charts.js.
const (
	marginL, marginR, marginT, marginB = 58, 14, 40, 36
	lineWidth                          = 1.6
	legendLine                         = 14 // px between legend lines
)

var (
	ink   = color.RGBA{0x37, 0x41, 0x51, 0xff}
	axis  = color.RGBA{0x9c, 0xa3, 0xaf, 0xff}
	grid  = color.RGBA{0xf0, 0xf1, 0xf3, 0xff}
	white = color.RGBA{0xff, 0xff, 0xff, 0xff}
)

// goRegular is the parsed Go font (golang.org/x/image/font/gofont), embedded in the binary.
var goRegular = sync.OnceValues(func() (*opentype.Font, error) { return opentype.Parse(goregular.TTF) })

// canvas is one PNG being drawn.
type canvas struct {
	img         *image.RGBA
	text, title font.Face
}

func newCanvas(w, h int) (*canvas, error) {
	f, err := goRegular()
	if err != nil {
		return nil, err
	}
	text, err := opentype.NewFace(f, &opentype.FaceOptions{Size: 11, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		return nil, err
	}
	title, err := opentype.NewFace(f, &opentype.FaceOptions{Size: 13, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		return nil, err
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(white), image.Point{}, draw.Src)
	return &canvas{img: img, text: text, title: title}, nil
}

func (cv *canvas) rect(x0, y0, x1, y1 float64, c color.Color) {
	r := image.Rect(int(math.Round(x0)), int(math.Round(y0)), int(math.Round(x1)), int(math.Round(y1))).Canon()
	if r.Dx() == 0 {
		r.Max.X++
	}
	draw.Draw(cv.img, r, image.NewUniform(c), image.Point{}, draw.Over)
}

// textWidth is the advance of s in face f, in pixels.
func textWidth(f font.Face, s string) float64 { return float64(font.MeasureString(f, s)) / 64 }

// write draws s with its baseline at y; align is -1 (left of x), 0 (centred) or 1 (right).
func (cv *canvas) write(f font.Face, s string, x, y float64, align int, c color.Color) {
	w := textWidth(f, s)
	switch align {
	case 0:
		x -= w / 2
	case -1:
		x -= w
	}
	d := font.Drawer{Dst: cv.img, Src: image.NewUniform(c), Face: f, Dot: fixed.P(int(math.Round(x)), int(math.Round(y)))}
	d.DrawString(s)
}

// path collects the quads of one stroked polyline and fills them in one pass.
type path struct {
	z     *vector.Rasterizer
	empty bool
}

func newPath(w, h int) *path { return &path{z: vector.NewRasterizer(w, h), empty: true} }

// segment adds a line from a to b, width px wide. Every quad has the same orientation, so
// overlapping joints add up instead of cancelling.
func (p *path) segment(ax, ay, bx, by, width float64) {
	dx, dy := bx-ax, by-ay
	l := math.Hypot(dx, dy)
	if l < 1e-6 {
		dx, dy, l = width/2, 0, width/2
	}
	nx, ny := -dy/l*width/2, dx/l*width/2
	p.z.MoveTo(float32(ax+nx), float32(ay+ny))
	p.z.LineTo(float32(bx+nx), float32(by+ny))
	p.z.LineTo(float32(bx-nx), float32(by-ny))
	p.z.LineTo(float32(ax-nx), float32(ay-ny))
	p.z.ClosePath()
	p.empty = false
}

// dashed adds a to b as dashes of on px separated by off px, continuing the pattern at phase.
func (p *path) dashed(ax, ay, bx, by, width, on, off float64, phase *float64) {
	l := math.Hypot(bx-ax, by-ay)
	if l == 0 {
		return
	}
	ux, uy := (bx-ax)/l, (by-ay)/l
	for pos := 0.0; pos < l; {
		period := math.Mod(*phase, on+off)
		if period < on {
			n := math.Min(on-period, l-pos)
			p.segment(ax+ux*pos, ay+uy*pos, ax+ux*(pos+n), ay+uy*(pos+n), width)
			pos += n
			*phase += n
		} else {
			n := math.Min(on+off-period, l-pos)
			pos += n
			*phase += n
		}
	}
}

func (p *path) fill(img *image.RGBA, c color.Color) {
	if !p.empty {
		p.z.Draw(img, img.Bounds(), image.NewUniform(c), image.Point{})
	}
}

// niceTicks returns about n round values covering [lo, hi]: the rule of charts.js (which also
// takes a smallest step, for time axes; the report's axes are not times).
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(max(1, n))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	f := raw / mag
	step := 10 * mag
	switch {
	case f < 1.5:
		step = mag
	case f < 3:
		step = 2 * mag
	case f < 7:
		step = 5 * mag
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		out = append(out, v)
	}
	return out
}

// tickLabel formats a tick value as charts.js's fmt does.
func tickLabel(v float64) string {
	a := math.Abs(v)
	trimZeros := func(s string) string {
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	switch {
	case a >= 1e7:
		return strconv.FormatFloat(v/1e6, 'f', 0, 64) + "M"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	case a >= 100 || v == 0:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return trimZeros(strconv.FormatFloat(v, 'f', 1, 64))
	case a >= 1:
		return trimZeros(strconv.FormatFloat(v, 'f', 2, 64))
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

// extent returns the range of the finite x (i = 0) or y (i = 1) values of the series.
func extent(series []Series, i int) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, p := range s.Points {
			v := p.X
			if i == 1 {
				v = p.Y
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return lo, hi, lo <= hi
}

// The smallest chart image PNG draws: below it the margins leave no plot.
const (
	MinPNGWidth  = 200
	MinPNGHeight = 120
)

// PNG draws c as a w×h PNG image: title, legend, axes with round ticks, grid, the series.
func PNG(c Chart, w, h int) ([]byte, error) {
	if w < MinPNGWidth || h < MinPNGHeight {
		return nil, fmt.Errorf("a chart image must be at least %d×%d pixels, not %d×%d", MinPNGWidth, MinPNGHeight, w, h)
	}
	cv, err := newCanvas(w, h)
	if err != nil {
		return nil, err
	}
	cv.write(cv.title, c.Title, marginL, 18, 1, ink)
	xlo, xhi, okx := extent(c.Series, 0)
	ylo, yhi, oky := extent(c.Series, 1)
	if !okx || !oky {
		cv.write(cv.text, "no data", float64(w)/2, float64(h)/2, 0, axis)
		return encode(cv.img)
	}
	if c.Kind == KindBar {
		xhi += c.Bin
	}
	ylo = math.Min(0, ylo)
	if yhi == ylo {
		yhi = ylo + 1
	}
	if xhi == xlo {
		xhi = xlo + 1
	}
	// Legend under the title, left to right, wrapping onto as many lines as it needs; the plot
	// starts below it (as in charts.js).
	lx, ly := float64(marginL), 33.0
	for _, s := range c.Series {
		tw := textWidth(cv.text, s.Name)
		if lx > marginL && lx+13+tw > float64(w-marginR) {
			lx, ly = marginL, ly+legendLine
		}
		// A line's swatch is a stroke as the line is drawn, dashed for a dashed line (charts.js).
		if col := palette[s.Color%len(palette)].c; c.Kind == KindBar {
			cv.rect(lx, ly-8, lx+9, ly+1, col)
		} else {
			for x := lx - 1; x < lx+10; x += 5 {
				end := x + 5
				if s.Dash {
					end = x + 3
				}
				cv.rect(x, ly-5, math.Min(end, lx+10), ly-2.6, col)
			}
		}
		cv.write(cv.text, s.Name, lx+13, ly, 1, ink)
		lx += tw + 24
	}
	top := marginT + (ly - 33)

	yTop := yhi * 1.05
	pw, ph := float64(w-marginL-marginR), float64(h)-top-marginB
	X := func(v float64) float64 { return marginL + (v-xlo)/(xhi-xlo)*pw }
	Y := func(v float64) float64 { return top + ph - (v-ylo)/(yTop-ylo)*ph }

	for _, v := range niceTicks(ylo, yTop, 5) {
		y := Y(v)
		if y < top-0.5 || y > top+ph+0.5 {
			continue
		}
		cv.rect(marginL, y, marginL+pw, y+1, grid)
		cv.write(cv.text, tickLabel(v), marginL-6, y+4, -1, ink)
	}
	for _, v := range niceTicks(xlo, xhi, max(2, int(pw/60))) {
		x := X(v)
		if x < marginL-0.5 || x > marginL+pw+0.5 {
			continue
		}
		cv.rect(x, top+ph, x+1, top+ph+4, axis)
		// A label at the right edge ends there instead of running past it (as in charts.js).
		if lbl := tickLabel(v); x+textWidth(cv.text, lbl)/2 > float64(w)-2 {
			cv.write(cv.text, lbl, float64(w)-2, top+ph+16, -1, ink)
		} else {
			cv.write(cv.text, lbl, x, top+ph+16, 0, ink)
		}
	}
	cv.rect(marginL, top+ph, marginL+pw, top+ph+1, axis)
	cv.rect(marginL, top, marginL+1, top+ph, axis)
	if c.X.Label != "" {
		cv.write(cv.text, c.X.Label, marginL+pw, float64(h)-4, -1, ink)
	}
	if c.Y.Label != "" {
		cv.write(cv.text, c.Y.Label, 4, top-4, 1, ink)
	}

	for i, s := range c.Series {
		col := palette[s.Color%len(palette)].c
		if c.Kind == KindBar {
			n := float64(len(c.Series))
			bw := math.Max(1, X(xlo+c.Bin)-X(xlo))
			for _, p := range s.Points {
				if math.IsNaN(p.Y) || p.Y <= 0 {
					continue
				}
				x := X(p.X) + bw*float64(i)/n
				cv.rect(x, Y(p.Y), x+math.Max(1, bw/n-0.5), Y(ylo), col)
			}
			continue
		}
		pa := newPath(w, h)
		open, px, py, phase := false, 0.0, 0.0, 0.0
		seg := func(x, y float64) {
			if s.Dash {
				pa.dashed(px, py, x, y, lineWidth, 5, 3, &phase)
			} else {
				pa.segment(px, py, x, y, lineWidth)
			}
			px, py = x, y
		}
		for _, p := range s.Points {
			if math.IsNaN(p.Y) || math.IsInf(p.Y, 0) {
				open = false
				continue
			}
			x, y := X(p.X), Y(p.Y)
			switch {
			case !open:
				px, py = x, y
				if len(s.Points) == 1 {
					pa.segment(x-1.5, y, x+1.5, y, 3)
				}
			case c.Kind == KindStep:
				seg(x, py)
				seg(x, y)
			default:
				seg(x, y)
			}
			open = true
		}
		pa.fill(cv.img, col)
	}

	return encode(cv.img)
}

func encode(img image.Image) ([]byte, error) {
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WritePNGs writes every chart of the report to dir as <chart id>.png, w×h pixels each, and
// returns the files written.
func (rep *Report) WritePNGs(dir string, w, h int) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, c := range rep.Charts() {
		b, err := PNG(c, w, h)
		if err != nil {
			return files, fmt.Errorf("chart %s: %w", c.ID, err)
		}
		p := filepath.Join(dir, c.ID+".png")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return files, err
		}
		files = append(files, p)
	}
	return files, nil
}
