package caddyfile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/llmtap/llmtap/modules/llmtap"
)

// FuzzUnmarshalCaddyfile feeds arbitrary tokens to the llmtap directive's parser
// (unmarshalHandler) and to the global option's (unmarshalApp). Neither may
// panic; every error must carry the position (Testfile:<line>) so a user can find the line; and
// a handler the parser accepted must pass Validate and encode to JSON, since the adapter
// writes it out as config. The seed corpus is every llmtap block of testdata/*.caddyfile and
// the invalid blocks of TestAdaptErrors' table, plus testdata/fuzz/FuzzUnmarshalCaddyfile.
func FuzzUnmarshalCaddyfile(f *testing.F) {
	for _, s := range caddyfileSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		input := "llmtap " + body
		var h llmtap.Handler
		if err := unmarshalHandler(caddyfile.NewTestDispenser(input), &h); err != nil {
			checkPosition(t, "directive", input, err)
		} else {
			if err := h.Validate(); err != nil {
				t.Fatalf("the directive parser accepted %q but Validate refuses it: %v", input, err)
			}
			if _, err := json.Marshal(&h); err != nil {
				t.Fatalf("the directive parser accepted %q but it does not encode: %v", input, err)
			}
		}
		var a llmtap.App
		if err := unmarshalApp(caddyfile.NewTestDispenser(input), &a); err != nil {
			checkPosition(t, "global option", input, err)
		} else if _, err := json.Marshal(&a); err != nil {
			t.Fatalf("the global option parser accepted %q but it does not encode: %v", input, err)
		}
	})
}

// checkPosition fails unless err names the test file and a line.
func checkPosition(t *testing.T, what, input string, err error) {
	t.Helper()
	if !positionRE.MatchString(err.Error()) {
		t.Fatalf("the %s parser's error for %q has no file:line: %v", what, input, err)
	}
}

var positionRE = regexp.MustCompile(`Testfile:\d+`)

// caddyfileSeeds returns the bodies (what follows the name) of the llmtap blocks in the golden
// Caddyfiles and in the error table.
func caddyfileSeeds(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob("testdata/*.caddyfile")
	if err != nil {
		tb.Fatal(err)
	}
	var texts []string
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		input, _, _ := strings.Cut(string(raw), separator)
		texts = append(texts, input)
	}
	for _, c := range errorCases {
		texts = append(texts, c.input)
	}
	var seeds []string
	for _, text := range texts {
		seeds = append(seeds, llmtapBlocks(text)...)
	}
	return seeds
}

// llmtapBlocks cuts from a Caddyfile every `llmtap {…}` block (directive or global option),
// returning what follows the name up to the matching brace.
func llmtapBlocks(text string) []string {
	var out []string
	for rest := text; ; {
		i := strings.Index(rest, "llmtap")
		if i < 0 {
			return out
		}
		rest = rest[i+len("llmtap"):]
		open := strings.IndexByte(rest, '{')
		if open < 0 || strings.Contains(rest[:open], "\n") && strings.TrimSpace(rest[:open]) != "" {
			continue
		}
		depth := 0
		for j := open; j < len(rest); j++ {
			switch rest[j] {
			case '{':
				depth++
			case '}':
				depth--
			}
			if depth == 0 {
				out = append(out, rest[:j+1])
				break
			}
		}
	}
}
