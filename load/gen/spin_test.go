package gen

import (
	"testing"
	"time"
)

func TestSpinFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		flag time.Duration
		rate float64
		want time.Duration
	}{
		{"default at a moderate rate spins for precision", -1, 100, DefaultSpinThreshold},
		{"default at 1000 req/s still spins", -1, 1000, DefaultSpinThreshold},
		{"default above 1000 req/s uses the timer, not a whole core", -1, 5000, -1},
		{"default in closed loop (no rate) keeps loadgen's default", -1, 0, DefaultSpinThreshold},
		{"zero means timer only", 0, 10, -1},
		{"an explicit value wins at any rate", 200 * time.Microsecond, 50000, 200 * time.Microsecond},
	}
	for _, tt := range tests {
		if got := SpinFor(tt.flag, tt.rate); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
