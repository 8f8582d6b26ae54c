package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmtap/llmtap/load/shadow"
	"github.com/llmtap/llmtap/telemetry/headroom"
	"github.com/llmtap/llmtap/telemetry/tap"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// HTTPError is a JSON admin route's error: the status to answer with and the error, whose
// message the host writes as {"error": "…"} (Caddy's admin listener does).
type HTTPError struct {
	Status int
	Err    error
}

func (e *HTTPError) Error() string { return e.Err.Error() }

func (e *HTTPError) Unwrap() error { return e.Err }

// Errorf returns an HTTPError of status with a formatted error (%w wraps, as in fmt.Errorf).
func Errorf(status int, format string, args ...any) error {
	return &HTTPError{Status: status, Err: fmt.Errorf(format, args...)}
}

// AllowMethod refuses (405) a request whose method is neither want nor one of also; the
// message names want. No Allow header is sent (none ever was).
func AllowMethod(r *http.Request, want string, also ...string) error {
	if r.Method == want || slices.Contains(also, r.Method) {
		return nil
	}
	return Errorf(http.StatusMethodNotAllowed, "method %s not allowed; use %s", r.Method, want)
}

// CountParam reads the query parameter name as a positive integer: def when it is absent or
// empty, 400 when it is anything else.
func CountParam(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, Errorf(http.StatusBadRequest, "%s must be a positive integer, got %q", name, v)
	}
	return n, nil
}

// writeJSON writes v as the JSON document of a route.
func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(v)
}

// writeJSONLines writes vs as JSON lines, in order.
func writeJSONLines[T any](w http.ResponseWriter, vs []T) error {
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	for i := range vs {
		if err := enc.Encode(&vs[i]); err != nil {
			return err
		}
	}
	return nil
}

// The JSON admin routes (/llmtap/…) over a Host. Each returns an HTTPError for what the
// client got wrong; the host writes it.

// engine refuses a request that is not a GET, and returns the running engine or, when no
// loaded config runs one, a 404.
func engine(h Host, r *http.Request) (*tap.Tap, error) {
	if err := AllowMethod(r, http.MethodGet); err != nil {
		return nil, err
	}
	if t := h.Tap(); t != nil {
		return t, nil
	}
	return nil, Errorf(http.StatusNotFound, "no loaded config uses the llmtap handler")
}

// flush delivers the records of requests that ended before now to the sinks (the mirror's
// pairs among them).
func flush(h Host) {
	if t := h.Tap(); t != nil {
		t.Flush()
	}
}

// Summary serves GET /llmtap/summary.
func Summary(h Host, w http.ResponseWriter, r *http.Request) error {
	t, err := engine(h, r)
	if err != nil {
		return err
	}
	return writeJSON(w, NewSummaryDoc(t, h.RecorderDropped()))
}

// Requests serves GET /llmtap/requests?limit=N[&slowest=K]: the N most recent records
// (default 100) as JSON lines, newest last, or the K slowest of them, slowest first.
func Requests(h Host, w http.ResponseWriter, r *http.Request) error {
	t, err := engine(h, r)
	if err != nil {
		return err
	}
	limit, err := CountParam(r, "limit", 100)
	if err != nil {
		return err
	}
	k, err := CountParam(r, "slowest", 0)
	if err != nil {
		return err
	}
	recs := t.Recent().Last(limit)
	if k > 0 {
		recs = Slowest(recs, k)
	}
	return writeJSONLines(w, recs)
}

// MirrorSummary serves GET /llmtap/mirror.
func MirrorSummary(h Host, w http.ResponseWriter, r *http.Request) error {
	if err := AllowMethod(r, http.MethodGet); err != nil {
		return err
	}
	flush(h) // so that pairs ended before this request are in
	doc := h.Mirror()
	if doc == nil {
		return Errorf(http.StatusNotFound, "mirroring is not available here")
	}
	return writeJSON(w, doc)
}

// MirrorPairList serves GET /llmtap/mirror/pairs?limit=N: the N most recent pairs (default
// 100) as JSON lines, oldest first, each with the live and the mirror TTFT, ITL and latency of
// one request.
func MirrorPairList(h Host, w http.ResponseWriter, r *http.Request) error {
	if err := AllowMethod(r, http.MethodGet); err != nil {
		return err
	}
	limit, err := CountParam(r, "limit", 100)
	if err != nil {
		return err
	}
	flush(h)
	pairs := h.MirrorPairs()
	return writeJSONLines(w, pairs[max(0, len(pairs)-limit):])
}

// TimelineWindows serves GET /llmtap/timeline[?since=<unix ms>&class=<class>&model=<model>]:
// the closed windows that start at or after since, with only the series of class and model
// when given.
func TimelineWindows(h Host, w http.ResponseWriter, r *http.Request) error {
	if err := AllowMethod(r, http.MethodGet); err != nil {
		return err
	}
	tl := h.Timeline()
	if tl == nil {
		return Errorf(http.StatusNotFound, "no timeline is running: load a config with the llmtap global option (and no timeline off)")
	}
	q := timeline.Query{Class: r.URL.Query().Get("class"), Model: r.URL.Query().Get("model")}
	if v := r.URL.Query().Get("since"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 {
			return Errorf(http.StatusBadRequest, "since must be a Unix time in milliseconds, got %q", v)
		}
		q.Since = time.UnixMilli(ms)
	}
	return writeJSON(w, NewTimelineDoc(tl, q))
}

// ShadowRoute is the prefix of the shadow admin routes:
//
//	GET  /llmtap/shadow                    every shadow load's status, the guard rails' state
//	                                       and the forged-marker count (JSON)
//	POST /llmtap/shadow/<name>/start       start (or restart) a load
//	POST /llmtap/shadow/<name>/stop        stop it; requests in flight finish
//	POST /llmtap/shadow/<name>/rate        {"rate": N}: set its rate (≤ its max_rate)
//	GET  /llmtap/shadow/<name>/headroom    a headroom probe's report (JSON; ?format=text for
//	                                       the table)
//
// None of them touches the config: a reload with the same config keeps what they set, a
// changed rate in the config replaces an admin-set rate.
const ShadowRoute = "/llmtap/shadow"

// ShadowLoads serves the routes under ShadowRoute.
func ShadowLoads(h Host, w http.ResponseWriter, r *http.Request) error {
	sh := h.ShadowLoads()
	if sh == nil {
		return Errorf(http.StatusNotFound, "shadow load is not available here")
	}
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, ShadowRoute), "/")
	if rest == "" {
		if err := AllowMethod(r, http.MethodGet); err != nil {
			return err
		}
		return writeJSON(w, sh.State())
	}
	name, action, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(action, "/") {
		return Errorf(http.StatusNotFound, "want /llmtap/shadow/<name>/start|stop|rate|headroom")
	}
	run := sh.Runner(name)
	if run == nil {
		return Errorf(http.StatusNotFound, "no shadow load named %q is loaded", name)
	}
	want := http.MethodPost
	if action == "headroom" {
		want = http.MethodGet
	}
	if err := AllowMethod(r, want); err != nil {
		return err
	}
	logged := func(what string) {
		if sh.Logged != nil {
			sh.Logged(name, what)
		}
	}
	switch action {
	case "start":
		if err := run.Start(); err != nil {
			return Errorf(http.StatusConflict, "starting shadow load %q: %v", name, err)
		}
		logged("started")
	case "stop":
		run.Stop()
		logged("stopped")
	case "rate":
		var body struct {
			Rate *float64 `json:"rate"`
		}
		dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil || body.Rate == nil {
			return Errorf(http.StatusBadRequest, `want a JSON body {"rate": <requests per second>}`)
		}
		if err := run.SetRate(*body.Rate); err != nil {
			status := http.StatusBadRequest
			if errors.Is(err, shadow.ErrTraceRate) {
				status = http.StatusConflict
			}
			return Errorf(status, "shadow load %q: %v", name, err)
		}
		logged(fmt.Sprintf("rate set to %v", *body.Rate))
	case "headroom":
		st := run.Status()
		if st.Headroom == nil {
			return Errorf(http.StatusNotFound, "shadow load %q is not a headroom probe", name)
		}
		passive := sh.State().PassiveHeadroom
		if r.URL.Query().Get("format") == "text" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, err := io.WriteString(w, st.Headroom.Table()+headroom.Table(passive))
			return err
		}
		// The probe's report with the passive estimates beside it.
		return writeJSON(w, struct {
			*shadow.HeadroomReport
			PassiveHeadroom []headroom.Estimate `json:"passive_headroom"`
		}{st.Headroom, passive})
	default:
		return Errorf(http.StatusNotFound, "unknown action %q; want start, stop, rate or headroom", action)
	}
	return writeJSON(w, run.Status())
}
