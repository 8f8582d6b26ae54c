package sensitive

import "testing"

func TestHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization":       true,
		"proxy-authorization": true,
		"Cookie":              true,
		"X-Api-Key":           true,
		"api-key":             true,
		"Anthropic-Api-Key":   true,
		"X-Auth-Token":        true,
		"X-Client-Secret":     true,
		"Content-Type":        false,
		"X-Request-Id":        false,
		"X-Session-Id":        false,
		"Accept-Encoding":     false,
	} {
		if got := Header(name); got != want {
			t.Errorf("Header(%q) = %v, want %v", name, got, want)
		}
	}
}
