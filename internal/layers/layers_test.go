// Package layers holds the import rules of the tree as a test: the engine (telemetry/) imports
// no generator, surface, exporter or Caddy package; the generators (load/, mirror/, mock/) import
// no surface, exporter or Caddy package; the file formats (format/) import no generator or
// surface, and of the engine only the record and the summaries (telemetry/record, telemetry/stats).
package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/llmtap/llmtap/"

// deps lists the module's own packages that the packages matching pattern import, directly or
// not, by importing package.
func deps(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, pattern).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, d := range f[1:] {
			if strings.HasPrefix(d, module) {
				m[f[0]] = append(m[f[0]], strings.TrimPrefix(d, module))
			}
		}
	}
	return m
}

// forbidden reports whether package d is one of prefixes or below one.
func forbidden(d string, prefixes ...string) bool {
	for _, p := range prefixes {
		if d == p || strings.HasPrefix(d, p+"/") {
			return true
		}
	}
	return false
}

var surfaces = []string{"api", "ui", "report", "modules", "caddyfile", "export", "cmd", "gen"}

// generators are the roots of the packages that make load: shadow load, benchmarks, replay,
// mirroring and the mock server.
var generators = []string{"load", "mirror", "mock"}

func TestLayers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for pattern, bad := range map[string][]string{
		"./telemetry/...": append(generators, surfaces...),
		"./load/...":      surfaces,
		"./mirror/...":    surfaces,
		"./mock/...":      surfaces,
		"./format/...":    append(generators, surfaces...),
	} {
		for pkg, ds := range deps(t, "../../"+strings.TrimPrefix(pattern, "./")) {
			for _, d := range ds {
				if forbidden(d, bad...) {
					t.Errorf("%s imports %s", strings.TrimPrefix(pkg, module), d)
				}
			}
		}
	}
}

// TestFormatLayers holds the file formats (format/) below the generators and surfaces and
// beside the engine: of telemetry/ they import the record (telemetry/record) and the summaries
// AIPerf's files render (telemetry/stats), with what those import, and nothing else.
func TestFormatLayers(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	engine := map[string]bool{}
	for _, p := range []string{"telemetry/record", "telemetry/stats"} {
		engine[p] = true
		for _, d := range deps(t, "../../"+p)[module+p] {
			engine[d] = true
		}
	}
	bad := append(generators, surfaces...)
	for pkg, ds := range deps(t, "../../format/...") {
		for _, d := range ds {
			if forbidden(d, bad...) || forbidden(d, "telemetry") && !engine[d] {
				t.Errorf("%s imports %s", strings.TrimPrefix(pkg, module), d)
			}
		}
	}
}
