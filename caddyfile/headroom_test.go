package caddyfile

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// TestAdaptPassiveHeadroom adapts a passive_headroom block into the handler's JSON.
func TestAdaptPassiveHeadroom(t *testing.T) {
	in := inDirective("\t\tpassive_headroom {\n\t\t\tttft 250ms\n\t\t\twindow 1500ms\n\t\t\twindows 20\n\t\t}")
	out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(in), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"passive_headroom":{"ttft_ms":250,"window_seconds":1.5,"windows":20}`; !strings.Contains(string(out), want) {
		t.Errorf("adapted:\n%s\nwant it to contain %s", out, want)
	}
}
