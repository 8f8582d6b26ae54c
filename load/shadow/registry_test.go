package shadow

import (
	"net/http"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/llmtap/llmtap/load/gen"
)

func registryConfig(name string, rate float64) Config {
	return Config{Name: name, Arrival: gen.ArrivalSpec{Pattern: "constant", Rate: rate}, MaxRate: 100,
		Source: &Source{URL: "http://127.0.0.1:9/", Bodies: [][]byte{[]byte(`{}`)}, Key: "k"}}
}

// TestRegistry adds, finds, lists and removes loads: OnAdd's undo runs on removal, and the
// removal of an entry that a successor of the same name replaced leaves the successor.
func TestRegistry(t *testing.T) {
	defer goleak.VerifyNone(t)
	var added, undone []string
	g := &Registry{OnAdd: func(r *Runner) func() {
		added = append(added, r.Name())
		return func() { undone = append(undone, r.Name()) }
	}}
	b, err := g.Add(registryConfig("b", 1))
	if err != nil {
		t.Fatal(err)
	}
	a, err := g.Add(registryConfig("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Add(Config{Name: "bad"}); err == nil {
		t.Error("an invalid config was added")
	}
	if g.Get("a") != a.Runner() || g.Get("nope") != nil {
		t.Error("Get does not find the loads by name")
	}
	names := func(l []*Runner) []string {
		var n []string
		for _, r := range l {
			n = append(n, r.Name())
		}
		return n
	}
	if got := names(g.Sorted()); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Sorted = %v, want [a b]", got)
	}
	b2, err := g.Add(registryConfig("b", 2)) // a successor, before the first b is removed
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	if g.Get("b") != b2.Runner() {
		t.Error("removing the replaced b removed its successor")
	}
	if _, err := a.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := b2.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(g.Running()) != 0 || !slices.Equal(added, []string{"b", "a", "b"}) || len(undone) != 3 {
		t.Errorf("after removing all: running %v, added %v, undone %v", names(g.Running()), added, undone)
	}
}

// TestEntryApply reconfigures a load only when the new config runs another load.
func TestEntryApply(t *testing.T) {
	defer goleak.VerifyNone(t)
	var g Registry
	e, err := g.Add(registryConfig("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Remove(t.Context())
	same := registryConfig("a", 1)
	same.Ready = func() bool { return true } // callbacks do not count
	if changed, err := e.Apply(same); changed || err != nil {
		t.Errorf("applying the same config: changed %v, %v", changed, err)
	}
	if changed, err := e.Apply(registryConfig("a", 5)); !changed || err != nil || e.Runner().Status().ConfigRate != 5 {
		t.Errorf("applying rate 5: changed %v, %v, status %+v", changed, err, e.Runner().Status())
	}
}

// TestSameConfig compares what makes a load, and nothing else.
func TestSameConfig(t *testing.T) {
	base := registryConfig("a", 1)
	tests := []struct {
		name string
		edit func(*Config)
		same bool
	}{
		{"identical", func(*Config) {}, true},
		{"callbacks differ", func(c *Config) { c.Ready = func() bool { return false }; c.OnHeadroom = func(HeadroomReport) {} }, true},
		{"a mark function is not compared", func(c *Config) {
			c.Source = &Source{URL: c.Source.URL, Bodies: c.Source.Bodies, Key: "k", Mark: func(http.Header) {}}
		}, true},
		{"rate", func(c *Config) { c.Arrival.Rate = 2 }, false},
		{"url", func(c *Config) { c.Source = &Source{URL: "http://x/", Bodies: c.Source.Bodies, Key: "k"} }, false},
		{"bodies", func(c *Config) { c.Source = &Source{URL: c.Source.URL, Bodies: [][]byte{[]byte(`{"a":1}`)}, Key: "k"} }, false},
		{"header", func(c *Config) {
			c.Source = &Source{URL: c.Source.URL, Bodies: c.Source.Bodies, Key: "k", Header: http.Header{"A": {"b"}}}
		}, false},
	}
	for _, tt := range tests {
		c := registryConfig("a", 1)
		tt.edit(&c)
		if got := SameConfig(base, c); got != tt.same {
			t.Errorf("%s: SameConfig = %v, want %v", tt.name, got, tt.same)
		}
	}
}
