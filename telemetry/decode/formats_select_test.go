package decode

import (
	"slices"
	"testing"
)

// TestTable checks the decoder table as a whole: every API has a decoder of its own name that
// pools correctly, routes point into the table, APIs lists each name once, and ExpectsDone is
// what the API's streams end with.
func TestTable(t *testing.T) {
	t.Parallel()
	wantDone := map[string]bool{
		APIOpenAIChat: true, APIOpenAICompletions: true, APIOpenAIResponses: true, APIAnthropicMessages: true,
		APITGIGenerate: true, APIOllamaChat: true, APIOllamaGenerate: true, APIEmbeddings: false, APIRerank: false,
	}
	names := APIs()
	if len(names) != len(wantDone)+1 || names[len(names)-1] != APIUnknown {
		t.Fatalf("APIs() = %v, want the %d table APIs and unknown last", names, len(wantDone))
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("APIs() lists %q twice (TGI has two routes but one API)", n)
		}
		seen[n] = true
		if !Known(n) {
			t.Errorf("Known(%q) = false for a listed API", n)
		}
		if ExpectsDone(n) != wantDone[n] {
			t.Errorf("ExpectsDone(%q) = %v, want %v", n, ExpectsDone(n), wantDone[n])
		}
		for range 2 {
			dec := Get(n)
			if p, ok := dec.(pooled); !ok || p.apiName() != n {
				t.Errorf("Get(%q) returned another API's decoder", n)
			}
			if _, ok := dec.(TextLimiter); !ok && n != APIUnknown {
				t.Errorf("the %q decoder does not implement TextLimiter", n)
			}
			if got := xviewOf(dec.Result()); got != xfresh() {
				t.Errorf("Get(%q) returned a used decoder: %+v", n, got)
			}
			dec.Event(nil, []byte(`{"error":"x"}`))
			Put(dec)
		}
	}
	if Known("ollama") || ExpectsDone(APIUnknown) {
		t.Errorf("a partial name is not an API; the unknown API expects no end event")
	}
	for _, r := range routes {
		if !slices.Contains(apis, r.api) {
			t.Errorf("route %q points outside the table", r.suffix)
		}
	}
	// A shorter suffix must not shadow a longer one listed after it.
	for i, a := range routes {
		for _, b := range routes[i+1:] {
			if len(b.suffix) > len(a.suffix) && hasSuffixSegment(b.suffix, a.suffix) {
				t.Errorf("route %q comes before %q, which it shadows", a.suffix, b.suffix)
			}
		}
	}
}

// hasSuffixSegment reports whether path ends with suffix; suffixes start with "/", so a match is
// a whole path segment.
func hasSuffixSegment(path, suffix string) bool {
	return len(path) >= len(suffix) && path[len(path)-len(suffix):] == suffix
}
