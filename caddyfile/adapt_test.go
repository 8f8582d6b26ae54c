package caddyfile

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

var update = flag.Bool("update", false, "rewrite the golden JSON of testdata/*.caddyfile")

const separator = "\n----------\n"

// TestAdapt adapts every testdata/*.caddyfile (the Caddyfile, a separator line, the expected
// JSON) and compares the JSON with the golden part.
func TestAdapt(t *testing.T) {
	files, err := filepath.Glob("testdata/*.caddyfile")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden Caddyfiles found (err %v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			input, want, ok := strings.Cut(string(raw), separator)
			if !ok && !*update {
				t.Fatalf("%s has no %q separator before its golden JSON", file, strings.TrimSpace(separator))
			}
			got := adapt(t, file, input)
			if *update {
				if err := os.WriteFile(file, []byte(input+separator+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if strings.TrimSpace(got) != strings.TrimSpace(want) {
				t.Errorf("adapted JSON differs from the golden file (run with -update to accept)\n--- got\n%s\n--- want\n%s", got, want)
			}
		})
	}
}

func adapt(t *testing.T, file, input string) string {
	t.Helper()
	adapter := caddyconfig.GetAdapter("caddyfile")
	out, warnings, err := adapter.Adapt([]byte(input), map[string]any{"filename": file})
	if err != nil {
		t.Fatalf("adapting %s: %v", file, err)
	}
	for _, w := range warnings {
		t.Errorf("warning adapting %s: %s:%d: %s", file, w.File, w.Line, w.Message)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "\t"); err != nil {
		t.Fatal(err)
	}
	return buf.String() + "\n"
}

// TestAdaptErrors checks that invalid llmtap options fail with the file, the line and a
// sentence that says what was expected.
func TestAdaptErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  string // the sentence that says what is expected
		line  int    // the line the error must point at
	}{
		{"an unknown option names the valid ones",
			":8080 {\n\tllmtap {\n\t\tfoo 1\n\t}\n\treverse_proxy 127.0.0.1:9\n}\n",
			`unknown llmtap option "foo"; expected api, max_event_size, max_request_body, max_response_body, tokenizer, inject_usage, record, mirror, tenant, server_timing, slo or passive_headroom`, 3},
		{"inject_usage takes no value",
			":8080 {\n\tllmtap {\n\t\tinject_usage on\n\t}\n}\n",
			`inject_usage takes no value, got "on"`, 3},
		{"a credential header is refused as the session header",
			":8080 {\n\tllmtap {\n\t\trecord /tmp/r {\n\t\t\tsession_header Authorization\n\t\t}\n\t}\n}\n",
			`record session_header "Authorization" may carry credentials, which are never recorded`, 5},
		{"an unknown record option names the valid ones",
			":8080 {\n\tllmtap {\n\t\trecord /tmp/r {\n\t\t\theaders all\n\t\t}\n\t}\n}\n",
			`unknown record option "headers"; expected dir, files, payloads`, 4},
		{"a sample above one is refused",
			":8080 {\n\tllmtap {\n\t\trecord /tmp/r {\n\t\t\tsample 150%\n\t\t}\n\t}\n}\n",
			`record sample: "150%" is not a fraction in (0, 1] (0.1 or 10%)`, 4},
		{"record needs a folder",
			":8080 {\n\tllmtap {\n\t\trecord {\n\t\t\tpayloads\n\t\t}\n\t}\n}\n",
			`record needs a folder`, 5},
		{"a size that is not a size says what a size looks like",
			":8080 {\n\tllmtap {\n\t\tmax_event_size lots\n\t}\n}\n",
			`max_event_size: "lots" is not a size; expected a number of bytes with an optional unit, such as 1MiB or 65536`, 3},
		{"a size needs a value",
			":8080 {\n\tllmtap {\n\t\tmax_request_body\n\t}\n}\n",
			`max_request_body needs a size, such as 1MiB or 65536`, 3},
		{"a zero size is refused with the valid range",
			":8080 {\n\tllmtap {\n\t\tmax_response_body 0\n\t}\n}\n",
			`max_response_body must be between 1 byte and 2GiB, got "0"`, 3},
		{"extra arguments to a size are refused",
			":8080 {\n\tllmtap {\n\t\tmax_event_size 1MiB 2MiB\n\t}\n}\n",
			`max_event_size takes one value, got another: "2MiB"`, 3},
		{"an unknown API lists the known ones",
			":8080 {\n\tllmtap {\n\t\tapi grpc\n\t}\n}\n",
			`api: "grpc" is not one of openai.chat, openai.completions,`, 3},
		{"an unknown global llmtap subdirective is refused",
			"{\n\tllmtap {\n\t\tbogus 1\n\t}\n}\n:8080 {\n\tllmtap\n}\n",
			`unknown llmtap global subdirective "bogus"`, 3},
		{"a gpu interval that is not a duration says what one looks like",
			"{\n\tllmtap {\n\t\tgpu {\n\t\t\tinterval fast\n\t\t}\n\t}\n}\n:8080 {\n\tllmtap\n}\n",
			`gpu interval: "fast" is not a positive duration, such as 250ms or 1s`, 4},
		{"an unknown gpu option names the valid ones",
			"{\n\tllmtap {\n\t\tgpu {\n\t\t\tdevices 0,1\n\t\t}\n\t}\n}\n:8080 {\n\tllmtap\n}\n",
			`unknown gpu option "devices"; expected interval, price_per_gpu_hour or off`, 4},
		{"gpu takes only off as an argument",
			"{\n\tllmtap {\n\t\tgpu on\n\t}\n}\n:8080 {\n\tllmtap\n}\n",
			`gpu takes no argument but off, got "on"`, 3},
		{"scrape needs a URL",
			"{\n\tllmtap {\n\t\tscrape {\n\t\t\tkind vllm\n\t\t}\n\t}\n}\n:8080 {\n\tllmtap\n}\n",
			`scrape needs the URL of a metrics page`, 3},
		{"a scrape kind that is not known lists the known ones",
			"{\n\tllmtap {\n\t\tscrape http://127.0.0.1:8000/metrics {\n\t\t\tkind triton\n\t\t}\n\t}\n}\n:8080 {\n\tllmtap\n}\n",
			`kind "triton" is not a known kind; expected vllm, sglang, tgi or dcgm`, 4},
		{"a scrape URL must be http",
			"{\n\tllmtap {\n\t\tscrape 127.0.0.1:8000/metrics\n\t}\n}\n:8080 {\n\tllmtap\n}\n",
			`url "127.0.0.1:8000/metrics" is not an http:// or https:// address`, 3},
		{"an unknown scrape option names the valid ones",
			"{\n\tllmtap {\n\t\tscrape http://127.0.0.1:8000/metrics {\n\t\t\ttimeout 1s\n\t\t}\n\t}\n}\n:8080 {\n\tllmtap\n}\n",
			`unknown scrape option "timeout"; expected kind or interval`, 4},
		{"a timeline window needs a duration",
			"{\n\tllmtap {\n\t\ttimeline {\n\t\t\twindow\n\t\t}\n\t}\n}\n:8080 {\n\tllmtap\n}\n",
			`timeline window needs a duration, such as 250ms or 1s`, 4},
		{"an unknown timeline option names the valid ones",
			"{\n\tllmtap {\n\t\ttimeline {\n\t\t\tbuckets 10\n\t\t}\n\t}\n}\n:8080 {\n\tllmtap\n}\n",
			`unknown timeline option "buckets"; expected window, keep, settle or off`, 4},
		{"mirror needs an upstream",
			":8080 {\n\tllmtap {\n\t\tmirror {\n\t\t\tsample 0.1\n\t\t}\n\t}\n}\n",
			`mirror needs an upstream URL, such as mirror http://10.0.0.2:8000`, 3},
		{"a mirror upstream must be http or https",
			":8080 {\n\tllmtap {\n\t\tmirror ftp://10.0.0.2\n\t}\n}\n",
			`mirror upstream "ftp://10.0.0.2": scheme must be http or https`, 3},
		{"a mirror sample above one is refused",
			":8080 {\n\tllmtap {\n\t\tmirror http://10.0.0.2:8000 {\n\t\t\tsample 2\n\t\t}\n\t}\n}\n",
			`mirror sample: "2" is not a fraction in (0, 1] (0.1 or 10%)`, 4},
		{"mirror max_in_flight must be a positive number",
			":8080 {\n\tllmtap {\n\t\tmirror http://10.0.0.2:8000 {\n\t\t\tmax_in_flight none\n\t\t}\n\t}\n}\n",
			`mirror max_in_flight: "none" is not a positive number of requests`, 4},
		{"mirror timeout must be a duration",
			":8080 {\n\tllmtap {\n\t\tmirror http://10.0.0.2:8000 {\n\t\t\ttimeout soon\n\t\t}\n\t}\n}\n",
			`mirror timeout: "soon" is not a positive duration, such as 250ms or 1s`, 4},
		{"mirror max_body is a size",
			":8080 {\n\tllmtap {\n\t\tmirror http://10.0.0.2:8000 {\n\t\t\tmax_body big\n\t\t}\n\t}\n}\n",
			`mirror max_body: "big" is not a size`, 4},
		{"forward_sensitive only takes credential headers",
			":8080 {\n\tllmtap {\n\t\tmirror http://10.0.0.2:8000 {\n\t\t\tforward_sensitive X-Tenant\n\t\t}\n\t}\n}\n",
			`mirror forward_sensitive: X-Tenant is not a credential header`, 4},
		{"header_up cannot set a hop-by-hop header",
			":8080 {\n\tllmtap {\n\t\tmirror http://10.0.0.2:8000 {\n\t\t\theader_up Connection close\n\t\t}\n\t}\n}\n",
			`mirror header_up: Connection is a hop-by-hop header`, 4},
		{"an unknown mirror option names the valid ones",
			":8080 {\n\tllmtap {\n\t\tmirror http://10.0.0.2:8000 {\n\t\t\tretries 3\n\t\t}\n\t}\n}\n",
			`unknown mirror option "retries"; expected sample, sample_header, trust_mirror_of, max_body, max_in_flight, timeout, header_up, forward_sensitive or verdict`, 4},
		{"a tenant header that carries credentials is refused",
			":8080 {\n\tllmtap {\n\t\ttenant header Authorization\n\t}\n}\n",
			`tenant header "Authorization" may carry credentials, which never become labels; use tenant api_key`, 3},
		{"an unknown tenant source names the valid ones",
			":8080 {\n\tllmtap {\n\t\ttenant cookie team\n\t}\n}\n",
			`tenant: "cookie" is not one of header, placeholder or api_key`, 3},
		{"a tenant placeholder must be a placeholder",
			":8080 {\n\tllmtap {\n\t\ttenant placeholder http.auth.user.id\n\t}\n}\n",
			`tenant placeholder: "http.auth.user.id" is not a placeholder`, 3},
		{"tenant api_key takes no name",
			":8080 {\n\tllmtap {\n\t\ttenant api_key X-Api-Key\n\t}\n}\n",
			`tenant api_key takes no name (got "X-Api-Key")`, 3},
		{"arguments on the directive line are refused",
			":8080 {\n\tllmtap on\n}\n",
			`llmtap takes no arguments on its line (got "on"); put options in a block`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(tt.input), map[string]any{"filename": "Caddyfile"})
			if err == nil {
				t.Fatalf("adapting succeeded; want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error\n  %v\nwant it to contain\n  %s", err, tt.want)
			}
			if pos := fmt.Sprintf("Caddyfile:%d", tt.line); !strings.Contains(err.Error(), pos) {
				t.Fatalf("error\n  %v\ndoes not name the position %s", err, pos)
			}
		})
	}
}
