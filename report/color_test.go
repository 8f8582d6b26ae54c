package report

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// TestClassColorsMatchDashboard: a traffic class has the dashboard's color in the report
// (issue 34: "dashboard and report use different colours for live/mirror/shadow"), whatever
// order the records come in: the table in ui/static/charts.js is the one in classColors.
func TestClassColorsMatchDashboard(t *testing.T) {
	t.Parallel()
	js, err := os.ReadFile("../ui/static/charts.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`CLASS_COLORS = \{([^}]*)\}`).FindSubmatch(js)
	if m == nil {
		t.Fatal("no CLASS_COLORS in charts.js")
	}
	dash := map[string]int{}
	for _, kv := range regexp.MustCompile(`(\w+): (\d+)`).FindAllSubmatch(m[1], -1) {
		dash[string(kv[1])], _ = strconv.Atoi(string(kv[2]))
	}
	if fmt.Sprint(dash) != fmt.Sprint(classColors) {
		t.Fatalf("charts.js CLASS_COLORS %v, report classColors %v", dash, classColors)
	}
	// Shadow and mirror records first: live still takes live's color.
	base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var recs []*record.Record
	for i, class := range []string{record.ClassShadow, record.ClassMirror, record.ClassLive, record.ClassReplay} {
		recs = append(recs, rec(base, fmt.Sprint(i), time.Duration(i)*time.Second, class, "m1", 20, 5, 10))
	}
	rep := reportOf(t, recs)
	for _, s := range chart(t, rep, "request_rate").Series {
		if want, ok := classColors[s.Name]; !ok || s.Color != want {
			t.Errorf("series %s has color %d, want %d (charts.js)", s.Name, s.Color, want)
		}
	}
}
