package gen

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Window is a daily time window in UTC, From ≤ t < To; To < From wraps past midnight.
type Window struct {
	From, To time.Duration // offsets from midnight
}

// ParseWindow reads "HH:MM-HH:MM" (UTC).
func ParseWindow(s string) (*Window, error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return nil, fmt.Errorf("window %q: want HH:MM-HH:MM (UTC)", s)
	}
	from, err1 := parseClock(a)
	to, err2 := parseClock(b)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("window %q: %w", s, err)
	}
	if from == to {
		return nil, fmt.Errorf("window %q is empty", s)
	}
	return &Window{From: from, To: to}, nil
}

func parseClock(s string) (time.Duration, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || hh < 0 || hh > 24 || mm < 0 || mm > 59 || hh == 24 && mm != 0 {
		return 0, fmt.Errorf("%q is not a time HH:MM", s)
	}
	return time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute, nil
}

// Contains reports whether t falls inside the window.
func (w *Window) Contains(t time.Time) bool {
	t = t.UTC()
	d := t.Sub(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC))
	if w.From < w.To {
		return d >= w.From && d < w.To
	}
	return d >= w.From || d < w.To
}

// String writes the window as HH:MM-HH:MM.
func (w *Window) String() string {
	f := func(d time.Duration) string {
		return fmt.Sprintf("%02d:%02d", int(d.Hours()), int(d.Minutes())%60)
	}
	return f(w.From) + "-" + f(w.To)
}
