package sensitive

import "testing"

func TestHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization":             true,
		"proxy-authorization":       true,
		"Cookie":                    true,
		"Set-Cookie":                true,
		"X-Api-Key":                 true,
		"api-key":                   true,
		"Anthropic-Api-Key":         true,
		"X-Goog-Api-Key":            true,
		"X-Auth-Token":              true,
		"X-Client-Secret":           true,
		"Ocp-Apim-Subscription-Key": true,
		"X-Functions-Key":           true,
		"X-Amz-Security-Token":      true,
		"X-Amz-Credential":          true,
		"X-Goog-Credential":         true,
		"X-Aws-Access-Key":          true,
		"Content-Type":              false,
		"X-Request-Id":              false,
		"X-Session-Id":              false,
		"Accept-Encoding":           false,
		"Idempotency-Key":           false,
		"X-Amz-Date":                false,
	} {
		if got := Header(name); got != want {
			t.Errorf("Header(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestQuery(t *testing.T) {
	for name, want := range map[string]bool{
		"api_key":              true, // OpenAI-compatible servers, many gateways
		"API_KEY":              true,
		"apikey":               true,
		"api-key":              true,
		"key":                  true, // Google Gemini
		"Key":                  true,
		"token":                true,
		"access_token":         true, // OAuth 2 bearer in a query (RFC 6750 §2.3)
		"id_token":             true,
		"refresh_token":        true,
		"auth_token":           true,
		"auth":                 true,
		"code":                 true, // OAuth authorization code
		"jwt":                  true,
		"subscription-key":     true, // Azure API Management
		"subscription_key":     true,
		"sig":                  true, // Azure SAS
		"signature":            true, // CloudFront, Google Cloud Storage V2
		"Signature":            true,
		"Key-Pair-Id":          true, // CloudFront
		"GoogleAccessId":       true, // Google Cloud Storage V2
		"AWSAccessKeyId":       true, // AWS SigV2
		"X-Amz-Credential":     true, // AWS SigV4
		"X-Amz-Signature":      true,
		"X-Amz-Security-Token": true,
		"X-Amz-Date":           true, // every X-Amz-* is part of the signature
		"x-goog-signature":     true, // Google Cloud Storage V4
		"X-Goog-Credential":    true,
		"client_secret":        true,
		"password":             true,
		"pwd":                  true,
		"session":              true,
		"api-version":          false, // Azure OpenAI
		"model":                false,
		"stream":               false,
		"keys":                 false,
		"monkey":               false,
		"beta":                 false,
		"format":               false,
		"limit":                false,
	} {
		if got := Query(name); got != want {
			t.Errorf("Query(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestStripQuery(t *testing.T) {
	for _, tc := range []struct {
		why, raw, want string
		removed        int
	}{
		{"nothing to strip keeps the query as it is", "api-version=2024-06-01&x=%2F", "api-version=2024-06-01&x=%2F", 0},
		{"a key goes, the rest stays in order and encoding", "a=1&api_key=sk-1&b=%2F", "a=1&b=%2F", 1},
		{"every occurrence goes", "key=1&key=2&model=m", "model=m", 2},
		{"an encoded name is judged decoded", "api%5Fkey=sk&x=1", "x=1", 1},
		{"a name without a value", "token&x=1", "x=1", 1},
		{"a signed URL loses its signature parameters", "X-Amz-Algorithm=AWS4&X-Amz-Credential=AK%2F&X-Amz-Signature=ab&part=1", "part=1", 3},
		{"a ';'-joined part is removed whole when any part of it is a credential", "a=1;sig=s&b=2", "b=2", 1},
		{"empty", "", "", 0},
	} {
		got, n := StripQuery(tc.raw)
		if got != tc.want || n != tc.removed {
			t.Errorf("%s: StripQuery(%q) = %q, %d; want %q, %d", tc.why, tc.raw, got, n, tc.want, tc.removed)
		}
	}
}

// FuzzStripQuery: whatever the query, no parameter of the result is flagged, and nothing
// unflagged is lost.
func FuzzStripQuery(f *testing.F) {
	for _, s := range []string{"a=1&api_key=x", "key=1;b=2", "X-Amz-Signature=%zz", "&&", "%41PI_KEY=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, n := StripQuery(raw)
		if n == 0 && got != raw {
			t.Fatalf("nothing removed but %q became %q", raw, got)
		}
		if again, m := StripQuery(got); m != 0 || again != got {
			t.Fatalf("%q still holds %d flagged parameters", got, m)
		}
	})
}
