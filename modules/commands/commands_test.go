package commands

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocNamesEveryCommand checks that the package doc lists every subcommand the
// package registers, and no other, so it cannot again say two where there are seven.
func TestPackageDocNamesEveryCommand(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if af.Doc != nil {
			doc += af.Doc.Text()
		}
	}
	listed := strings.Count(doc, "`llmtap ")
	if listed != len(registered) {
		t.Errorf("the package doc names %d commands, the package registers %d: %v\n%s", listed, len(registered), registered, doc)
	}
	for _, name := range registered {
		if !strings.Contains(doc, "`llmtap "+name+"`") {
			t.Errorf("the package doc does not name `llmtap %s`:\n%s", name, doc)
		}
	}
}
