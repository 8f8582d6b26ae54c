package docs

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/format/parquetfile"
)

// TestParquetColumnsDocumented: every column of the Parquet records and trace (nested ones as
// parent.child) is listed in docs/parquet.md, and every record column has its JSONL field's
// name.
func TestParquetColumnsDocumented(t *testing.T) {
	b, err := os.ReadFile("parquet.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("parquet"), ",")
			if !strings.Contains(page, "`"+prefix+name+"`") {
				t.Errorf("Parquet column %s%s (%s.%s) is not documented in docs/parquet.md", prefix, name, typ.Name(), f.Name)
			}
			if ft := f.Type; ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
				walk(prefix+name+".", ft.Elem())
			}
		}
	}
	walk("", reflect.TypeFor[parquetfile.RecordRow]())
	walk("", reflect.TypeFor[parquetfile.TraceRow]())
}
