package llmtap_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"google.golang.org/protobuf/types/descriptorpb"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/internal/testkit"
)

// leakSecrets are the credential values TestSecretsNeverLeak sends, by where they travel. Each
// is unique enough that any occurrence in an output is that value.
var leakSecrets = map[string]string{
	"Authorization":       "Bearer sk-leakcheck-AUTHZ-7f3a91",
	"Proxy-Authorization": "Basic bGVha2NoZWNrLVBST1hZ",
	"X-Api-Key":           "leakcheck-XAPIKEY-52c0d8",
	"Api-Key":             "leakcheck-APIKEY-e19b44",
	"Cookie":              "sid=leakcheck-COOKIE-0a7c; theme=dark",
	// A header only this deployment knows carries a credential: it matches none of the
	// built-in credential names, so only llmtap's rule of recording no header but the
	// session header keeps it out.
	"X-Tenant-Signature": "leakcheck-TENANTSIG-3b9e27",
	// A credential inside the JSON body, removed from payloads by redact_fields.
	"body api_key": "leakcheck-BODYKEY-88d1f0",
}

// leakLogFilter is the log encoder a deployment that logs at debug level needs: Caddy redacts
// Authorization, Proxy-Authorization, Cookie and Set-Cookie in its logs by itself, but writes
// every other request header as sent, in access logs and in reverse_proxy's debug lines
// ("upstream roundtrip"), so API-key headers need a filter. README's "Secrets" section gives
// it; the test runs with it, as a deployment would. TestSecretsNeverLeak also checks, on a
// second log without the filter, that the only values in it are those Caddy itself wrote
// there (see caddyLeaksWithoutFilter), so the filter is known to be needed and sufficient.
const leakLogFilter = `format filter {
			wrap json
			fields {
				request>headers>X-Api-Key delete
				request>headers>Api-Key delete
				request>headers>X-Tenant-Signature delete
			}
		}`

// TestSecretsNeverLeak sends requests carrying credential headers (and a credential in the
// body) through real Caddy with llmtap recording everything it can (records, trace, payloads,
// a session header) and Caddy logging at debug level to files, then reads everything llmtap
// and Caddy produced — every recorded file, the log files, /metrics, and every llmtap admin
// route that reads state (the JSON routes, the dashboard, and each read-only Connect method)
// — and fails on any occurrence of any secret value. Recorded files must be 0600 in 0700
// folders.
func TestSecretsNeverLeak(t *testing.T) {
	up := startUpstream(t, recordingMock())
	base := t.TempDir()
	dir, logs := filepath.Join(base, "rec"), filepath.Join(base, "logs")
	if err := os.Mkdir(logs, 0o700); err != nil {
		t.Fatal(err)
	}
	admin, siteAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	cf := fmt.Sprintf(`{
	admin %[1]s
	default_bind 127.0.0.1
	auto_https off
	persist_config off
	storage file_system %[2]s
	llmtap {
		gpu off
	}
	log {
		output file %[3]s/caddy.log
		level DEBUG
		%[6]s
	}
	log unfiltered {
		output file %[3]s/unfiltered.log
		level DEBUG
	}
}

http://%[4]s {
	log {
		output file %[3]s/access.log
		%[6]s
	}
	llmtap {
		record %[5]s {
			payloads
			redact_fields api_key
			session_header X-Session-Id
			flush_interval 100ms
		}
	}
	reverse_proxy %[7]s {
		flush_interval -1
	}
}
`, admin, storageDir, logs, siteAddr, dir, leakLogFilter, up.addr)
	testkit.StartCaddyfile(t, t.Name(), cf)
	p := &proxy{admin: "http://" + admin, sites: []string{"http://" + siteAddr}}

	c := newClient(t)
	const n = 12
	for i := range n {
		body, _ := json.Marshal(map[string]any{
			"model": "rec-model", "stream": i%2 == 0, "max_tokens": 4,
			"api_key":  leakSecrets["body api_key"],
			"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("Question %d about lighthouses", i)}},
		})
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, p.sites[0]+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", fmt.Sprintf("leak-%d", i))
		req.Header.Set("X-Session-Id", fmt.Sprintf("conv-%d", i%3))
		for h, v := range leakSecrets {
			if !strings.Contains(h, " ") {
				req.Header.Set(h, v)
			}
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %s", i, resp.Status)
		}
	}
	waitIdle(t)

	outputs := map[string][]byte{} // name -> content
	for _, path := range llmtapReadRoutes(t) {
		outputs["GET "+path] = p.adminGet(t, path)
	}
	outputs["GET /metrics"] = p.adminGet(t, "/metrics")
	for name, b := range connectReads(t, p.admin) {
		outputs[name] = b
	}
	if err := caddy.Stop(); err != nil { // flushes and closes the recording and the logs
		t.Fatal(err)
	}
	readFilesInto(t, outputs, dir, logs) // faults_secrets_test.go

	// The check would pass vacuously if nothing was produced: every kind of output must be there
	// and carry the requests.
	for _, want := range []struct{ name, has string }{
		{"GET /llmtap/requests?limit=1000", `"request_id":"leak-11"`},
		{"GET /metrics", "llmtap_requests_total"},
		{"logs/caddy.log", `"level":"debug"`},
		{"logs/access.log", `"uri":"/v1/chat/completions"`},
	} {
		if !bytes.Contains(outputs[want.name], []byte(want.has)) {
			t.Errorf("%s does not contain %q: the leak check would not see this output", want.name, want.has)
		}
	}
	kinds := map[string]int{}
	for name := range outputs {
		if k, _, ok := strings.Cut(strings.TrimPrefix(name, "rec/"), "-"); ok && strings.HasPrefix(name, "rec/") {
			kinds[k]++
		}
	}
	if kinds["records"] == 0 || kinds["trace"] == 0 || kinds["payloads"] == 0 {
		t.Errorf("recorded files by kind %v; want records, trace and payloads", kinds)
	}

	unfiltered := outputs["logs/unfiltered.log"]
	delete(outputs, "logs/unfiltered.log")
	for name, b := range outputs {
		for what, secret := range leakSecrets {
			for _, part := range secretParts(secret) {
				if bytes.Contains(b, []byte(part)) {
					t.Errorf("%s contains the %s value (%q)", name, what, part)
				}
			}
		}
	}
	caddyLeaksWithoutFilter(t, unfiltered)
	checkNoSecrets(t, dir) // modes: folder 0700, files 0600
}

// secretParts returns the distinctive parts of a secret value: the whole value, and each
// "leakcheck-…" token in it, so a value cut or re-encoded around its token is still found.
func secretParts(v string) []string {
	parts := []string{v}
	for f := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == ' ' || r == ';' || r == '=' }) {
		if strings.Contains(f, "leakcheck") {
			parts = append(parts, f)
		}
	}
	return parts
}

// caddyLeaksWithoutFilter checks the debug log written without leakLogFilter: Caddy itself
// writes the API-key headers there (so the filter is needed), and no line that carries a
// secret comes from llmtap's loggers (so the filter on Caddy's fields is enough).
func caddyLeaksWithoutFilter(t *testing.T, log []byte) {
	t.Helper()
	if !bytes.Contains(log, []byte(leakSecrets["X-Api-Key"])) {
		t.Logf("Caddy's unfiltered debug log no longer holds X-Api-Key values; the filter in README may no longer be needed")
	}
	for line := range bytes.Lines(log) {
		for what, secret := range leakSecrets {
			if !bytes.Contains(line, []byte(secret)) {
				continue
			}
			var entry struct {
				Logger string `json:"logger"`
			}
			_ = json.Unmarshal(line, &entry)
			if strings.Contains(entry.Logger, "llmtap") {
				t.Errorf("llmtap's logger %q wrote the %s value: %s", entry.Logger, what, line)
			}
			if what == "Authorization" || what == "Proxy-Authorization" || what == "Cookie" {
				t.Errorf("the %s value is in Caddy's log, which redacts it by default: %s", what, line)
			}
		}
	}
}

// llmtapReadRoutes returns the GET paths of llmtap's JSON admin routes and dashboard (the
// Connect service is read by connectReads).
func llmtapReadRoutes(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, m := range caddy.GetModules("admin.api") {
		if !strings.HasPrefix(string(m.ID), "admin.api.llmtap") {
			continue
		}
		for _, r := range m.New().(caddy.AdminRouter).Routes() {
			if strings.HasPrefix(r.Pattern, "/llmtap.v1.") {
				continue
			}
			path := r.Pattern
			if strings.HasSuffix(path, "/requests") || strings.HasSuffix(path, "/pairs") {
				path += "?limit=1000"
			}
			paths = append(paths, path)
		}
	}
	if len(paths) < 2 {
		t.Fatalf("found %d llmtap admin routes", len(paths))
	}
	return paths
}

// connectReads calls every method of the Connect service marked free of side effects, with an
// empty JSON request, and returns the bodies by procedure.
func connectReads(t *testing.T, admin string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	methods := llmtapv1.File_llmtap_v1_llmtap_proto.Services().ByName("TapService").Methods()
	for i := range methods.Len() {
		m := methods.Get(i)
		opts, _ := m.Options().(*descriptorpb.MethodOptions)
		if m.IsStreamingServer() || m.IsStreamingClient() || opts.GetIdempotencyLevel() != descriptorpb.MethodOptions_NO_SIDE_EFFECTS {
			continue
		}
		proc := "/llmtap.v1.TapService/" + string(m.Name())
		ctx, cancel := context.WithTimeout(t.Context(), 10e9)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, admin+proc, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", proc, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s: %s", proc, resp.Status, b)
		}
		out["POST "+proc] = b
	}
	if len(out) == 0 {
		t.Fatal("no read-only Connect method found")
	}
	return out
}
