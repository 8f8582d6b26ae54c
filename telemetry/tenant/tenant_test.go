package tenant

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/telemetry/labelcap"
)

func TestAPIKey(t *testing.T) {
	for _, tc := range []struct {
		why    string
		header map[string]string
		want   string
	}{
		{"a Bearer token", map[string]string{"Authorization": "Bearer sk-1"}, "sk-1"},
		{"bearer in any case, spaces trimmed", map[string]string{"Authorization": "bearer   sk-2 "}, "sk-2"},
		{"x-api-key (Anthropic)", map[string]string{"X-Api-Key": "ak"}, "ak"},
		{"api-key (Azure OpenAI)", map[string]string{"Api-Key": "az"}, "az"},
		{"x-goog-api-key (Gemini)", map[string]string{"X-Goog-Api-Key": "g"}, "g"},
		{"Bearer wins over x-api-key", map[string]string{"Authorization": "Bearer b", "X-Api-Key": "x"}, "b"},
		{"Basic credentials are not an API key", map[string]string{"Authorization": "Basic YTpi"}, ""},
		{"Basic does not hide an x-api-key", map[string]string{"Authorization": "Basic YTpi", "X-Api-Key": "x"}, "x"},
		{"no key", map[string]string{"X-Tenant": "t"}, ""},
	} {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		if got := APIKey(h); got != tc.want {
			t.Errorf("%s: APIKey = %q, want %q", tc.why, got, tc.want)
		}
	}
}

// TestKeyID: a key's tenant is stable under one secret, differs between keys and between
// secrets, and never holds the key.
func TestKeyID(t *testing.T) {
	s1, s2 := []byte(strings.Repeat("a", 32)), []byte(strings.Repeat("b", 32))
	const key = "sk-live-abcdef0123456789"
	a := KeyID(s1, key)
	if a != KeyID(s1, key) {
		t.Error("the same key and secret gave two tenants")
	}
	if !strings.HasPrefix(a, KeyPrefix) || len(a) != len(KeyPrefix)+keyHexDigits {
		t.Errorf("KeyID = %q: want %q and %d hex digits", a, KeyPrefix, keyHexDigits)
	}
	if a == KeyID(s2, key) {
		t.Error("two secrets gave the same tenant: the hash is not keyed")
	}
	if a == KeyID(s1, key+"x") {
		t.Error("two keys gave the same tenant")
	}
	if strings.Contains(a, key) || strings.Contains(a, key[:8]) {
		t.Errorf("the tenant %q shows the key", a)
	}
	if KeyID(s1, "") != "" {
		t.Error("no key must give no tenant")
	}
}

func TestBound(t *testing.T) {
	if got := Bound("  team-a \t"); got != "team-a" {
		t.Errorf("Bound trims: %q", got)
	}
	long := strings.Repeat("x", 10<<10)
	if got := Bound(long); len(got) > labelcap.MaxLen || got != labelcap.Shorten(long) {
		t.Errorf("a 10 KiB tenant became %d bytes", len(got))
	}
}
