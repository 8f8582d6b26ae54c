package bench

import (
	"slices"
	"testing"
	"time"
)

// TestUserCentricMatchesAIPerfsExample checks the schedule against the example in AIPerf's
// user_centric_rate.py (15 users, 20-turn sessions, 1 request a second): users start a second
// apart with 20, 6, 11, 16, 2, 7, 12, 17, 3, 8, 13, 18, 4, 9 and 14 turns left, and each is
// replaced at its start + its turns × the 15 s gap.
func TestUserCentricMatchesAIPerfsExample(t *testing.T) {
	u := NewUserCentric(1, 15, 20, func(int) int { return 20 })
	if u.Gap() != 15*time.Second {
		t.Fatalf("gap %v, want 15s", u.Gap())
	}
	var turns []int
	for n := range 15 {
		if at := u.Next(); at != time.Duration(n)*time.Second {
			t.Errorf("user %d starts at %v, want %ds", n, at, n)
		}
		turns = append(turns, u.Turns(n))
	}
	if want := []int{20, 6, 11, 16, 2, 7, 12, 17, 3, 8, 13, 18, 4, 9, 14}; !slices.Equal(turns, want) {
		t.Errorf("turns left %v, want AIPerf's %v", turns, want)
	}
	// The replacements, earliest first: user 4 (2 turns, started at 4 s) at 4 + 2×15 = 34 s,
	// user 8 (3 turns, 8 s) at 53 s, user 12 (4 turns, 12 s) at 72 s, user 1 (6 turns) at 91 s.
	for _, want := range []time.Duration{34, 53, 72, 91} {
		if at := u.Next(); at != want*time.Second {
			t.Errorf("replacement at %v, want %ds", at, want)
		}
	}
	if u.Turns(15) != 20 {
		t.Errorf("a replacement sends %d turns, want all 20", u.Turns(15))
	}
}
