package examples

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/llmtap/llmtap/caddyfile" // registers the llmtap directive and modules
)

// offlineEnv points everything a validation may touch at the test's own folders: Caddy's
// storage and autosave (XDG folders), the recording folder of recording.Caddyfile, and the OTLP
// metrics exporter, which `metrics { otlp }` would otherwise aim at localhost:4318 ("none" makes
// Caddy's autoexport use a no-op reader; the option itself is still parsed and provisioned).
func offlineEnv(t *testing.T) {
	t.Helper()
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("LLMTAP_RECORD_DIR", t.TempDir())
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
}

// adapt turns Caddyfile text into Caddy JSON, failing on any error or adapter warning other
// than the ones listed in allowedWarnings.
func adapt(t *testing.T, name string, body []byte) []byte {
	t.Helper()
	cfg, warnings, err := caddyconfig.GetAdapter("caddyfile").Adapt(body, map[string]any{"filename": name})
	if err != nil {
		t.Fatalf("adapting %s: %v", name, err)
	}
	for _, w := range warnings {
		if !allowedWarnings[w.Message] {
			t.Errorf("%s:%d: adapter warning: %s", w.File, w.Line, w.Message)
		}
	}
	return cfg
}

// allowedWarnings are adapter warnings an example may produce on purpose.
var allowedWarnings = map[string]bool{
	// openai-cloud.Caddyfile sets the Host header explicitly, so the example still works when
	// the upstream is reached over plain HTTP or a different transport; Caddy notes that for
	// TLS upstreams it would have done the same.
	"Unnecessary header_up Host: the reverse proxy's default behavior is to pass the configured upstream address to the upstream when proxying to HTTPS": true,
}

// validate provisions every module of the JSON config without starting listeners, as
// `llmtap validate` does.
func validate(t *testing.T, name string, cfgJSON []byte) {
	t.Helper()
	var cfg *caddy.Config
	if err := caddy.StrictUnmarshalJSON(cfgJSON, &cfg); err != nil {
		t.Fatalf("%s: decoding the JSON config: %v", name, err)
	}
	if err := caddy.Validate(cfg); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// usesHandler reports whether the JSON config has an llmtap handler anywhere in it.
func usesHandler(t *testing.T, cfgJSON []byte) bool {
	t.Helper()
	var v any
	if err := json.Unmarshal(cfgJSON, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case map[string]any:
			if v["handler"] == "llmtap" {
				return true
			}
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// glob returns the files matching pattern, failing when there are none (a renamed folder
// must not turn the test into one that checks nothing).
func glob(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no files match %s (err %v)", pattern, err)
	}
	return files
}

// TestCaddyfilesAdaptAndValidate adapts every example Caddyfile and provisions the result.
func TestCaddyfilesAdaptAndValidate(t *testing.T) {
	offlineEnv(t)
	for _, file := range glob(t, "*.Caddyfile") {
		t.Run(file, func(t *testing.T) {
			body, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			cfg := adapt(t, file, body)
			if !usesHandler(t, cfg) {
				t.Errorf("%s has no llmtap handler; every example should measure something", file)
			}
			validate(t, file, cfg)
		})
	}
}

// TestJSONConfigsValidate provisions every example JSON config.
func TestJSONConfigsValidate(t *testing.T) {
	offlineEnv(t)
	for _, file := range glob(t, "*.json") {
		if file == grafanaFile {
			continue // a Grafana dashboard, checked by TestGrafanaDashboard
		}
		t.Run(file, func(t *testing.T) {
			body, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !usesHandler(t, body) {
				t.Errorf("%s has no llmtap handler", file)
			}
			validate(t, file, body)
		})
	}
}

// TestVLLMJSONMatchesCaddyfile checks that vllm.json is what vllm.Caddyfile adapts to with its
// defaults, so the two examples cannot drift apart.
func TestVLLMJSONMatchesCaddyfile(t *testing.T) {
	t.Setenv("VLLM_UPSTREAM", "")
	os.Unsetenv("VLLM_UPSTREAM") // the default applies only when the variable is unset
	body, err := os.ReadFile("vllm.Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("vllm.json")
	if err != nil {
		t.Fatal(err)
	}
	var got, exp any
	if err := json.Unmarshal(adapt(t, "vllm.Caddyfile", body), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &exp); err != nil {
		t.Fatalf("vllm.json: %v", err)
	}
	if !reflect.DeepEqual(got, exp) {
		pretty, _ := json.MarshalIndent(got, "", "\t")
		t.Errorf("vllm.json differs from the adapted vllm.Caddyfile; the Caddyfile adapts to\n%s", pretty)
	}
}
