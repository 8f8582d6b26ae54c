package jsonobj

import (
	"math"
	"strings"
	"testing"
)

// Members come out in the order given (encoding/json would sort them), keys and values
// encoded as encoding/json encodes them.
func TestMarshalKeepsOrder(t *testing.T) {
	t.Parallel()
	b, err := Marshal([]Member{{"z", 1}, {"a \"<q>\"", []string{"x"}}, {"m", nil}, {"n", map[string]int{"b": 2, "a": 1}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"z":1,"a \"\u003cq\u003e\"":["x"],"m":null,"n":{"a":1,"b":2}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	if b, err := Marshal(nil); err != nil || string(b) != "{}" {
		t.Errorf("no members: %s, %v", b, err)
	}
}

// A value encoding/json refuses fails the whole object, naming its key.
func TestMarshalNamesTheBadMember(t *testing.T) {
	t.Parallel()
	_, err := Marshal([]Member{{"ok", 1}, {"ttft_ms", math.NaN()}})
	if err == nil || !strings.HasPrefix(err.Error(), "ttft_ms: ") {
		t.Fatalf("err %v, want one that names ttft_ms", err)
	}
}
