package caddyfile

import (
	"fmt"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// TestAdaptShadowErrors checks that bad shadow and guard options fail with the file, the line
// and what was wrong.
func TestAdaptShadowErrors(t *testing.T) {
	t.Parallel()
	wrap := func(body string) string {
		return "{\n\tllmtap {\n" + body + "\t}\n}\n:8080 {\n\tllmtap\n}\n"
	}
	tests := []struct {
		name, input, want string
		line              int
	}{
		{"a shadow load needs a name", wrap("\t\tshadow {\n\t\t}\n"), "shadow needs a name", 3},
		{"an unknown shadow option", wrap("\t\tshadow a {\n\t\t\tspeed 5\n\t\t}\n"), `unknown shadow option "speed"`, 4},
		{"a rate that is not a number", wrap("\t\tshadow a {\n\t\t\trate fast\n\t\t}\n"), `shadow rate: "fast" is not a non-negative number`, 4},
		{"an unknown arrival process", wrap("\t\tshadow a {\n\t\t\tarrival bursty\n\t\t}\n"), `shadow arrival: "bursty" is not one of poisson, gamma or constant`, 4},
		{"streaming is on or off", wrap("\t\tshadow a {\n\t\t\tstreaming maybe\n\t\t}\n"), `shadow streaming: "maybe" is not on or off`, 4},
		{"a bad window", wrap("\t\tshadow a {\n\t\t\twindow 25:00-01:00\n\t\t}\n"), `is not a time HH:MM`, 4},
		{"a bad extra", wrap("\t\tshadow a {\n\t\t\textra min_tokens\n\t\t}\n"), `extra "min_tokens"`, 4},
		{"an unknown endpoint type", wrap("\t\tshadow a {\n\t\t\tendpoint_type grpc\n\t\t}\n"), `shadow endpoint_type: "grpc" is not one of chat, completions, messages or ollama_chat`, 4},
		{"a trace needs a file", wrap("\t\tshadow a {\n\t\t\ttrace {\n\t\t\t}\n\t\t}\n"), "trace needs a file", 4},
		{"headroom slo with an unknown metric", wrap("\t\tshadow a {\n\t\t\theadroom {\n\t\t\t\tslo ttft:500\n\t\t\t}\n\t\t}\n"), `unknown metric "ttft"`, 5},
		{"headroom attainment over 1", wrap("\t\tshadow a {\n\t\t\theadroom {\n\t\t\t\tattainment 150%\n\t\t\t}\n\t\t}\n"), `headroom attainment: "150%" is not a fraction in [0, 1] (0.1 or 10%)`, 5},
		{"a guard status that is no HTTP status", wrap("\t\tguard {\n\t\t\tstatuses 42\n\t\t}\n"), `statuses: "42" is not an HTTP status`, 4},
		{"a guard duration", wrap("\t\tguard {\n\t\t\twindow soon\n\t\t}\n"), `guard window: "soon" is not a positive duration`, 4},
		{"guard twice", wrap("\t\tguard {\n\t\t}\n\t\tguard {\n\t\t}\n"), "guard is given twice", 5},
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
