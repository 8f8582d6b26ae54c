package headroom

import "math"

// A level is the requests that arrived at one concurrency, summed: n requests, at mean
// concurrency x (sumC/n), with mean TTFT and mean latency.
type level struct {
	n, sumC, sumTTFT, sumTTFT2, sumLat, sumWaiting, sumKV float64
	scraped                                               float64 // requests that arrived with a scrape of their upstream in hand
}

func (l *level) add(o *level) {
	l.n += o.n
	l.sumC += o.sumC
	l.sumTTFT += o.sumTTFT
	l.sumTTFT2 += o.sumTTFT2
	l.sumLat += o.sumLat
	l.sumWaiting += o.sumWaiting
	l.sumKV += o.sumKV
	l.scraped += o.scraped
}

// point is one level as the fit sees it: concurrency x, mean y, weight w.
type point struct{ x, y, w float64 }

// stick is a fitted hockey stick: y = Base for x ≤ Knee, Base + Slope·(x − Knee) beyond.
type stick struct {
	Knee, Base, Slope float64
	ok                bool
}

// at evaluates the stick at x.
func (s stick) at(x float64) float64 { return s.Base + s.Slope*max(0, x-s.Knee) }

// fitStick fits a hockey stick to pts (sorted by x) by weighted least squares: for a given
// knee k the model y = a + b·max(0, x − k) is linear in a and b and solved in closed form, so
// the knee is searched: first at every point's x and midway between neighbours, then on a grid
// of an eighth of the local spacing around the best of those; the knee with the smallest
// residual sum of squares wins. A negative slope is not a knee (a server does not get faster
// under load): such knees are skipped, and a flat line is the fallback. It needs at least
// three points and costs O(points²), off the request path.
func fitStick(pts []point) stick {
	if len(pts) < 3 || pts[len(pts)-1].x-pts[0].x < 1e-9 {
		return stick{}
	}
	best := flat(pts)
	bestSSE := sse(pts, best)
	try := func(k float64) {
		s, e, ok := solve(pts, k)
		if ok && e < bestSSE-1e-12*max(1, bestSSE) {
			best, bestSSE = s, e
		}
	}
	for i, p := range pts {
		try(p.x)
		if i+1 < len(pts) {
			try((p.x + pts[i+1].x) / 2)
		}
	}
	if best.Slope > 0 {
		k, gap := best.Knee, 0.5
		for i := 1; i < len(pts); i++ {
			if pts[i-1].x <= k && k <= pts[i].x {
				gap = (pts[i].x - pts[i-1].x) / 2
			}
		}
		for j := -8; j <= 8; j++ {
			try(k + float64(j)*gap/8)
		}
	}
	best.ok = true
	return best
}

// flat is the weighted mean of pts as a line without a knee.
func flat(pts []point) stick {
	var sw, sy float64
	for _, p := range pts {
		sw += p.w
		sy += p.w * p.y
	}
	hi := pts[0].x
	for _, p := range pts {
		hi = max(hi, p.x)
	}
	return stick{Knee: hi, Base: sy / sw}
}

// solve fits a and b for the knee k and returns the residual sum of squares; ok is false when
// the design is singular (no point beyond k) or the slope is negative.
func solve(pts []point, k float64) (stick, float64, bool) {
	var sw, su, suu, sy, suy, syy float64
	for _, p := range pts {
		u := max(0, p.x-k)
		sw += p.w
		su += p.w * u
		suu += p.w * u * u
		sy += p.w * p.y
		suy += p.w * u * p.y
		syy += p.w * p.y * p.y
	}
	det := sw*suu - su*su
	if det <= 1e-12*sw*suu || su == 0 {
		return stick{}, 0, false
	}
	b := (sw*suy - su*sy) / det
	a := (sy - b*su) / sw
	if b < 0 {
		return stick{}, 0, false
	}
	return stick{Knee: k, Base: a, Slope: b}, max(0, syy-a*sy-b*suy), true
}

func sse(pts []point, s stick) float64 {
	var e float64
	for _, p := range pts {
		d := p.y - s.at(p.x)
		e += p.w * d * d
	}
	return e
}

// slopeT is the slope of s over its standard error, given the variance of one observation
// (sigma2) and the points' weights as counts: Var(b) = sigma2·Σw / (Σw·Σwu² − (Σwu)²) for
// u = max(0, x − knee). 0 when the slope is 0 or undetermined.
func slopeT(pts []point, s stick, sigma2 float64) float64 {
	if s.Slope <= 0 {
		return 0
	}
	var sw, su, suu float64
	for _, p := range pts {
		u := max(0, p.x-s.Knee)
		sw += p.w
		su += p.w * u
		suu += p.w * u * u
	}
	det := sw*suu - su*su
	if det <= 0 || sigma2 <= 0 {
		if det > 0 {
			return math.Inf(1) // no noise at all
		}
		return 0
	}
	return s.Slope / math.Sqrt(sigma2*sw/det)
}
