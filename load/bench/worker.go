package bench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmtap/llmtap/load/gen"
)

// Worker is this process's share of one workload split across Count processes (a Kubernetes
// Indexed Job's pods, or any launcher's): worker Index sends the requests whose global number n
// has n mod Count = Index, so the workers together send exactly what one process would, each
// request once. The zero value, and Count 1, is the whole workload.
type Worker struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Environment variables a launcher sets: Kubernetes sets JOB_COMPLETION_INDEX in each pod of
// an Indexed Job; the count is not set by Kubernetes, so the manifest passes it.
const (
	EnvWorkerIndex = "JOB_COMPLETION_INDEX"
	EnvWorkerCount = "LLMTAP_WORKER_COUNT"
)

// WorkerFromEnv returns the worker the environment names, Index and Count defaulting to 0 and
// 1 where unset; a set value that is not a number is an error.
func WorkerFromEnv() (Worker, error) {
	w := Worker{Count: 1}
	for _, v := range []struct {
		name string
		dst  *int
	}{{EnvWorkerIndex, &w.Index}, {EnvWorkerCount, &w.Count}} {
		s, ok := os.LookupEnv(v.name)
		if !ok || s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return w, fmt.Errorf("$%s %q: want an integer", v.name, s)
		}
		*v.dst = n
	}
	return w, nil
}

// Validate reports a count below 1 or an index outside [0, Count).
func (w Worker) Validate() error {
	if w.Count < 1 || w.Index < 0 || w.Index >= w.Count {
		return fmt.Errorf("worker index %d of count %d: want a count ≥ 1 and 0 ≤ index < count", w.Index, w.Count)
	}
	return nil
}

// Split reports whether the workload is split (Count > 1).
func (w Worker) Split() bool { return w.Count > 1 }

// N returns the global number of the worker's k-th request.
func (w Worker) N(k int) int {
	if !w.Split() {
		return k
	}
	return w.Index + k*w.Count
}

// Requests returns how many of the global requests 0 … total-1 are the worker's (0: total is
// 0, no limit).
func (w Worker) Requests(total int) int {
	if !w.Split() || total == 0 {
		return total
	}
	return (total - w.Index + w.Count - 1) / w.Count
}

// Concurrency returns the worker's share of n requests in flight: n/Count, the first n mod
// Count workers one more, so the shares add up to n.
func (w Worker) Concurrency(n int) int {
	if !w.Split() {
		return n
	}
	s := n / w.Count
	if w.Index < n%w.Count {
		s++
	}
	return s
}

// Take returns the items of xs that are the worker's: every Count-th from Index. A replay
// splits its scheduled requests (each a sessionless request or a session's first turn) so,
// which keeps every session on one worker and spreads the load evenly in time.
func Take[T any](w Worker, xs []T) []T {
	if !w.Split() {
		return xs
	}
	var out []T
	for i := w.Index; i < len(xs); i += w.Count {
		out = append(out, xs[i])
	}
	return out
}

// Shifted returns arrivals a, each intended by later: a worker's phase in a constant rate
// split across workers, or its first request's place in a replayed trace.
func Shifted(a gen.Arrivals, by time.Duration) gen.Arrivals {
	if by == 0 {
		return a
	}
	return shifted{a, by}
}

type shifted struct {
	a  gen.Arrivals
	by time.Duration
}

func (s shifted) Next() time.Duration {
	d := s.a.Next()
	if d == gen.End {
		return d
	}
	return d + s.by
}

// ParseStartAt reads a shared wall-clock start time: RFC 3339 (2026-12-01T10:00:00Z) or Unix
// seconds (1796119200, fractions allowed). Empty is the zero time (start at once).
func ParseStartAt(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && f < 1e11 {
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)), nil
	}
	return time.Time{}, fmt.Errorf("--start-at %q: want an RFC 3339 time (2026-12-01T10:00:00Z) or Unix seconds", s)
}

// Dir is the default artifact folder of the worker: a folder per worker under the workload's
// (dir), so that workers sharing a volume do not overwrite each other.
func (w Worker) Dir(dir string) string {
	if !w.Split() {
		return dir
	}
	return filepath.Join(dir, "worker"+strconv.Itoa(w.Index))
}

// Arrivals builds the worker's share of an open-loop schedule of rate arr.Rate: rate/N each,
// from a random stream of the worker's own so that the workers' arrivals are independent (N
// Poisson processes of rate λ/N superpose into one of rate λ); a constant rate is phased,
// worker i sending at (i + kN)/λ, so the workers together send the one-process schedule
// exactly. stream picks the random stream of the phase (profiling or warmup).
func (w Worker) Arrivals(arr gen.ArrivalSpec, seed, stream uint64) (gen.Arrivals, error) {
	if !w.Split() {
		return arr.New(rand.New(rand.NewPCG(seed, stream)))
	}
	share := arr
	share.Rate = arr.Rate / float64(w.Count)
	a, err := share.New(rand.New(rand.NewPCG(seed, stream+uint64(w.Index+1)<<16)))
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(strings.TrimSpace(share.Pattern), gen.PatternConstant) {
		a = Shifted(a, time.Duration(float64(w.Index)/arr.Rate*float64(time.Second)))
	}
	return a, nil
}
