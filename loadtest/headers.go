package loadtest

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/llmtap/llmtap/shadow/workload"
)

// Headers returns the headers of a benchmark's requests: each "Name: value" of lines
// (--header), then apiKey (--api-key) as the endpoint type's API takes it, x-api-key with the
// Anthropic version for messages and a bearer Authorization otherwise. A malformed line is
// left out, with an error.
func Headers(lines []string, apiKey, endpointType string) (http.Header, []error) {
	h := http.Header{}
	var errs []error
	for _, line := range lines {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			errs = append(errs, fmt.Errorf("--header %q: want 'Name: value'", line))
			continue
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	switch {
	case apiKey == "":
	case endpointType == workload.EndpointMessages:
		h.Set("X-Api-Key", apiKey)
		h.Set("Anthropic-Version", "2023-06-01")
	default:
		h.Set("Authorization", "Bearer "+apiKey)
	}
	return h, errs
}
