package gen

import (
	"testing"
	"time"
)

// TestParseWindow: a window that wraps past midnight contains the night and not the day, and
// prints as it was written; malformed and empty windows are refused.
func TestParseWindow(t *testing.T) {
	t.Parallel()
	if w, err := ParseWindow("22:00-02:30"); err != nil || !w.Contains(time.Date(2026, 1, 1, 23, 0, 0, 0, time.UTC)) || w.Contains(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)) || w.String() != "22:00-02:30" {
		t.Errorf("window: %v %v", w, err)
	}
	for _, s := range []string{"", "10:00", "25:00-01:00", "10:00-10:00"} {
		if _, err := ParseWindow(s); err == nil {
			t.Errorf("ParseWindow(%q): no error", s)
		}
	}
}
