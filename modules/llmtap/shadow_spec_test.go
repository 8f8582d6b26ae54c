package llmtap_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/load/workload"
	"github.com/llmtap/llmtap/modules/llmtap"
)

// fullShadows is a shadows list that sets every field of a shadow load (the JSON the
// Caddyfile golden caddyfile/testdata/shadow.caddyfile adapts to, with share added), written
// as encoding/json writes it back: fields in declaration order, durations in nanoseconds.
const fullShadows = `{"shadows":[` +
	`{"name":"steady","url":"http://127.0.0.1:8080/v1/chat/completions","model":"llama","endpoint_type":"messages",` +
	`"rate":5,"arrival":"gamma","smoothness":2,"isl":512,"isl_stddev":128,"osl":128,"osl_stddev":32,` +
	`"extra":["min_tokens:128","ignore_eos:true"],"streaming":false,"headers":{"Authorization":"Bearer shadow-key"},` +
	`"seed":7,"entries":20,"start_after":60000000000,"duration":600000000000,"window":"22:00-06:00",` +
	`"max_in_flight":64,"max_rate":50,"share":3},` +
	`{"name":"replayed","url":"http://127.0.0.1:8080/v1/chat/completions","model":"llama",` +
	`"trace":{"file":"/var/lib/llmtap/trace.jsonl","speedup":2,"format":"mooncake","max_requests":1000}},` +
	`{"name":"probe","url":"http://127.0.0.1:8080/v1/chat/completions","model":"llama",` +
	`"headroom":{"start":0.5,"step":0.5,"max":20,"step_duration":30000000000,` +
	`"slo":"time_to_first_token:500 inter_token_latency:50","attainment":0.9,"min_live":10},"stopped":true}]}`

// TestShadowConfigJSONRoundTrip: a shadow config that sets every field reads into the app
// (Caddy's strict decoding: every member is a field) and is written back byte for byte, so
// embedding workload.Spec in ShadowConfig left the app's JSON as it was; the fields land
// where they mean something (the embedded spec, Stopped beside it).
func TestShadowConfigJSONRoundTrip(t *testing.T) {
	t.Parallel()
	var app llmtap.App
	if err := caddy.StrictUnmarshalJSON([]byte(fullShadows), &app); err != nil {
		t.Fatalf("reading every shadow field: %v", err)
	}
	got, err := json.Marshal(&app)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte(fullShadows)) {
		t.Errorf("written back as\n%s\nwant\n%s", got, fullShadows)
	}
	s := app.Shadows
	if len(s) != 3 || s[0].Share != 3 || time.Duration(s[0].StartAfter) != time.Minute || *s[0].Streaming ||
		s[1].Trace.MaxRequests != 1000 || time.Duration(s[2].Headroom.StepDuration) != 30*time.Second || !s[2].Stopped || s[0].Stopped {
		t.Errorf("fields read as %+v %+v %+v", s[0], s[1], s[2])
	}
	// Durations as strings read as Caddy reads them and are written as nanoseconds.
	var sc llmtap.ShadowConfig
	if err := caddy.StrictUnmarshalJSON([]byte(`{"name":"a","start_after":"1m30s","duration":"1d"}`), &sc); err != nil {
		t.Fatal(err)
	}
	if out, _ := json.Marshal(&sc); string(out) != `{"name":"a","url":"","start_after":90000000000,"duration":86400000000000}` {
		t.Errorf("string durations written back as %s", out)
	}
}

// TestDurationAsCaddyReadsIt: workload.Duration, which keeps Caddy out of the generator
// packages, reads every JSON value as caddy.Duration does (the same value, or an error with the
// same text) and writes the same JSON.
func TestDurationAsCaddyReadsIt(t *testing.T) {
	t.Parallel()
	inputs := []string{
		`0`, `1500000000`, `-5`, `9223372036854775807`, `null`, `1.5`, `1e9`, `true`, `{}`,
		`"300ms"`, `"1.5h"`, `"2h45m"`, `"1m30s"`, `"1d"`, `"1.5d"`, `"1d12h"`, `"-1d"`, `"+2d"`, `"10us"`, `"10µs"`,
		`"0"`, `""`, `"d"`, `"1dd"`, `"x1d"`, `"1d1d"`, `"5"`, `"1h1d"`, `"1e3s"`, `"1.d"`, `".5d"`, `"3w"`, `"106751d"`,
		`"` + strings.Repeat("1", 1025) + `"`, `"` + strings.Repeat("1", 1023) + `s"`,
	}
	for _, in := range inputs {
		var c caddy.Duration
		var w workload.Duration
		cerr, werr := json.Unmarshal([]byte(in), &c), json.Unmarshal([]byte(in), &w)
		if int64(c) != int64(w) || (cerr == nil) != (werr == nil) || (cerr != nil && cerr.Error() != werr.Error()) {
			t.Errorf("%.40s: caddy.Duration %d (%v), workload.Duration %d (%v)", in, c, cerr, w, werr)
		}
		cj, _ := json.Marshal(c)
		wj, _ := json.Marshal(w)
		if !bytes.Equal(cj, wj) {
			t.Errorf("%.40s: caddy.Duration writes %s, workload.Duration %s", in, cj, wj)
		}
	}
}
