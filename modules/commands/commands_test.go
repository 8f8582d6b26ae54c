package commands

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPackageDocNamesEveryCommand checks that the package doc lists every subcommand the
// package registers, and no other, so it cannot again say two where there are seven.
func TestPackageDocNamesEveryCommand(t *testing.T) {
	t.Parallel()
	sources, _ := filepath.Glob("*.go")
	var doc string
	for _, name := range slices.DeleteFunc(sources, func(n string) bool { return strings.HasSuffix(n, "_test.go") }) {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			doc += f.Doc.Text()
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
