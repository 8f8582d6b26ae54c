package llmtap

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/api"
	"github.com/llmtap/llmtap/shadow/inproc"
)

// The shadow admin routes, on Caddy's admin listener:
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
const shadowRoute = "/llmtap/shadow"

func shadowStatus() api.ShadowDoc {
	doc := api.ShadowDoc{Shadows: []inproc.Status{}, Guard: guardState(), ForgedMarkers: proc.marks.forged.Load(),
		ExpiredMarkers: proc.marks.expired.Load(), ReplayedMarkers: proc.marks.replayed.Load(),
		HardMaxRate: inproc.HardMaxRate, HardMaxInFlight: inproc.HardMaxInFlight}
	for _, r := range shadowRunners() {
		doc.Shadows = append(doc.Shadows, r.Status())
	}
	return doc
}

func (adminAPI) shadow(w http.ResponseWriter, r *http.Request) error {
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, shadowRoute), "/")
	if rest == "" {
		if err := allowMethod(r, http.MethodGet); err != nil {
			return err
		}
		return writeJSON(w, shadowStatus())
	}
	name, action, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(action, "/") {
		return apiErr(http.StatusNotFound, "want /llmtap/shadow/<name>/start|stop|rate|headroom")
	}
	run := shadowRunner(name)
	if run == nil {
		return apiErr(http.StatusNotFound, "no shadow load named %q is loaded", name)
	}
	want := http.MethodPost
	if action == "headroom" {
		want = http.MethodGet
	}
	if err := allowMethod(r, want); err != nil {
		return err
	}
	switch action {
	case "start":
		if err := run.Start(); err != nil {
			return apiErr(http.StatusConflict, "starting shadow load %q: %v", name, err)
		}
		logShadowControl(name, "started")
	case "stop":
		run.Stop()
		logShadowControl(name, "stopped")
	case "rate":
		var body struct {
			Rate *float64 `json:"rate"`
		}
		dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil || body.Rate == nil {
			return apiErr(http.StatusBadRequest, `want a JSON body {"rate": <requests per second>}`)
		}
		if err := run.SetRate(*body.Rate); err != nil {
			status := http.StatusBadRequest
			if errors.Is(err, inproc.ErrTraceRate) {
				status = http.StatusConflict
			}
			return apiErr(status, "shadow load %q: %v", name, err)
		}
		logShadowControl(name, fmt.Sprintf("rate set to %v", *body.Rate))
	case "headroom":
		st := run.Status()
		if st.Headroom == nil {
			return apiErr(http.StatusNotFound, "shadow load %q is not a headroom probe", name)
		}
		if r.URL.Query().Get("format") == "text" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, err := io.WriteString(w, st.Headroom.Table())
			return err
		}
		return writeJSON(w, st.Headroom)
	default:
		return apiErr(http.StatusNotFound, "unknown action %q; want start, stop, rate or headroom", action)
	}
	return writeJSON(w, run.Status())
}

func logShadowControl(name, what string) {
	caddy.Log().Named("llmtap.shadow").Info("shadow load "+what+" through the admin API", zap.String("shadow", name))
}
