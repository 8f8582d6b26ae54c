package inject

import "testing"

func TestAcceptEncoding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		values               []string
		compressed, identity bool
		reason               string
	}{
		{nil, false, true, "no header: identity only"},
		{[]string{""}, false, true, "an empty header lists nothing"},
		{[]string{"identity"}, false, true, "identity is not compressed"},
		{[]string{"gzip, deflate"}, true, true, "what httpx (the OpenAI Python SDK) sends"},
		{[]string{"br, gzip, deflate"}, true, true, "what Node's fetch sends"},
		{[]string{"GZIP"}, true, true, "codings are case-insensitive"},
		{[]string{"gzip;q=0, identity"}, false, true, "gzip refused with q=0"},
		{[]string{"gzip; q=0.000"}, false, true, "q=0.000 is q=0"},
		{[]string{"gzip;q=0.001"}, true, true, "a small q still accepts"},
		{[]string{"*"}, true, true, "any coding"},
		{[]string{"*;q=0"}, false, false, "nothing at all: not even identity"},
		{[]string{"gzip, *;q=0"}, true, false, "gzip only"},
		{[]string{"gzip, identity;q=0"}, true, false, "identity refused by name"},
		{[]string{"*;q=0, identity"}, false, true, "identity listed beats the refusing star"},
		{[]string{"identity", "zstd"}, true, true, "a second header line counts too"},
		{[]string{"gzip;q=nope"}, true, true, "an unreadable q counts as accepting, the cautious side"},
		{[]string{" , ,identity;q=1"}, false, true, "empty elements are skipped"},
	}
	for _, tc := range tests {
		got := AcceptEncoding(tc.values)
		if got.Compressed != tc.compressed || got.Identity != tc.identity {
			t.Errorf("%q: compressed %v identity %v, want %v %v: %s", tc.values, got.Compressed, got.Identity, tc.compressed, tc.identity, tc.reason)
		}
	}
}

// FuzzAcceptEncoding checks, for any header value: it never panics; a second header line that
// lists only refused codings never makes a compressed coding acceptable; listing gzip always
// does; listing identity after everything always accepts identity.
func FuzzAcceptEncoding(f *testing.F) {
	for _, s := range []string{"", "gzip", "gzip;q=0", "*;q=0, identity", "br;q=0.5, gzip;q=1", ";;=,", "gzip;q=1e-400", "identity;q=0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := AcceptEncoding([]string{v})
		if AcceptEncoding([]string{v, "br;q=0"}).Compressed != got.Compressed {
			t.Fatalf("%q: adding a refused coding changed whether compression is accepted", v)
		}
		if !AcceptEncoding([]string{v + ",gzip"}).Compressed {
			t.Fatalf("%q,gzip: gzip not accepted", v)
		}
		if !AcceptEncoding([]string{v, "identity"}).Identity {
			t.Fatalf("%q then identity: identity not accepted", v)
		}
	})
}
