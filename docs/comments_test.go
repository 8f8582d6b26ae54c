package docs

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citedFile matches a file name a comment cites: a path or name ending in one of the
// extensions the repository's own files have.
var citedFile = regexp.MustCompile(`[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.(go|md|sh|proto|Caddyfile)\b`)

// elsewhere are the files comments cite from other projects, each named in its comment with
// the project that has it.
var elsewhere = map[string]string{
	"text_parse.go":                        "prometheus/common",
	"gen-ai-metrics.md":                    "the OpenTelemetry GenAI semantic conventions",
	"docs/hardware/gpu.md":                 "the OpenTelemetry hardware semantic conventions",
	"common.md":                            "the OpenTelemetry hardware semantic conventions",
	"docs/metrics-reference.md":            "AIPerf",
	"docs/models/components/thinkchunk.md": "mistralai client-ts",
}

// TestCommentsCiteExistingFiles: every file a Go comment of the repository cites exists, in the
// comment's folder, from the repository root, or (a bare name) somewhere in the repository; a
// file of another project is listed in elsewhere. A comment that sends its reader to a file
// the repository does not have (a design note kept outside it, a file since renamed) fails.
func TestCommentsCiteExistingFiles(t *testing.T) {
	t.Parallel()
	const root = ".."
	names := map[string]bool{}
	var sources []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		names[d.Name()] = true
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".pb.go") && !strings.HasSuffix(p, ".connect.go") {
			sources = append(sources, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	for _, src := range sources {
		f, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			_, comment, ok := strings.Cut(sc.Text(), "//")
			if !ok {
				continue
			}
			for _, ref := range citedFile.FindAllString(comment, -1) {
				ref = strings.TrimPrefix(ref, "./")
				if strings.Contains(comment, "://") && strings.Contains(comment, ref) && strings.Contains(comment, "/"+ref) {
					continue // part of a URL
				}
				if elsewhere[ref] != "" || exists(filepath.Join(filepath.Dir(src), ref)) || exists(filepath.Join(root, ref)) ||
					(!strings.Contains(ref, "/") && names[ref]) {
					continue
				}
				t.Errorf("%s:%d: the comment cites %s, which the repository does not have", src, n, ref)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
}
