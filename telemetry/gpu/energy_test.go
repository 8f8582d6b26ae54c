package gpu

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at builds a one-GPU sample d after t0 with both energy and power valid.
func at(d time.Duration, energyMJ uint64, powerMW uint32) Sample {
	return Sample{Time: t0.Add(d), EnergyMJ: energyMJ, PowerMW: powerMW, Valid: FieldEnergy | FieldPower}
}

func TestEnergyBetween(t *testing.T) {
	s := time.Second
	noEnergy := at(2*s, 999_999, 0)
	noEnergy.Valid = FieldPower
	tests := []struct {
		name    string
		samples []Sample
		from    time.Time
		to      time.Time
		want    Energy
	}{
		{"steady counter: 100 J per second over 3 s", []Sample{at(0, 1_000_000, 0), at(s, 1_100_000, 0), at(2*s, 1_200_000, 0), at(3*s, 1_300_000, 0)},
			t0, t0.Add(3 * s), Energy{Joules: 300, Duration: 3 * s, Samples: 4}},
		{"window excludes samples outside it", []Sample{at(0, 0, 0), at(s, 100_000, 0), at(2*s, 250_000, 0), at(3*s, 900_000, 0)},
			t0.Add(s), t0.Add(2 * s), Energy{Joules: 150, Duration: s, Samples: 2}},
		{"counter reset mid-window clamps that interval to 0", []Sample{at(0, 5_000_000, 0), at(s, 5_100_000, 0), at(2*s, 20_000, 0), at(3*s, 120_000, 0)},
			t0, t0.Add(3 * s), Energy{Joules: 200, Duration: 3 * s, Samples: 4, Resets: 1}},
		{"only a reset: zero joules, not negative", []Sample{at(0, 5_000_000, 0), at(s, 0, 0)},
			t0, t0.Add(s), Energy{Joules: 0, Duration: s, Samples: 2, Resets: 1}},
		{"sample without energy support is skipped", []Sample{at(0, 0, 0), at(s, 100_000, 0), noEnergy, at(3*s, 300_000, 0)},
			t0, t0.Add(3 * s), Energy{Joules: 300, Duration: 3 * s, Samples: 3}},
		{"single sample gives no energy", []Sample{at(0, 7, 0)},
			t0, t0.Add(time.Hour), Energy{Samples: 1}},
		{"empty input", nil, t0, t0.Add(time.Hour), Energy{}},
		{"flat counter: idle GPU, zero joules", []Sample{at(0, 42, 0), at(s, 42, 0)},
			t0, t0.Add(s), Energy{Duration: s, Samples: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EnergyBetween(tt.samples, tt.from, tt.to)
			if math.Abs(got.Joules-tt.want.Joules) > 1e-9 || got.Duration != tt.want.Duration ||
				got.Samples != tt.want.Samples || got.Resets != tt.want.Resets {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPowerIntegral(t *testing.T) {
	s := time.Second
	tests := []struct {
		name    string
		samples []Sample
		want    float64 // joules over [t0, t0+1h]
		wantDur time.Duration
	}{
		{"constant 400 W for 2 s is 800 J", []Sample{at(0, 0, 400_000), at(s, 0, 400_000), at(2*s, 0, 400_000)}, 800, 2 * s},
		{"linear ramp 100→300 W over 1 s is 200 J (trapezoid is exact)", []Sample{at(0, 0, 100_000), at(s, 0, 300_000)}, 200, s},
		{"uneven spacing: 0.5 s at 100 W then 1.5 s at 200 W", []Sample{at(0, 0, 100_000), at(s/2, 0, 100_000), at(2*s, 0, 200_000)}, 50 + 1.5*150, 2 * s},
		{"duplicate timestamp adds nothing", []Sample{at(0, 0, 100_000), at(0, 0, 900_000), at(s, 0, 900_000)}, 900, s},
		{"one sample: no interval", []Sample{at(0, 0, 100_000)}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PowerIntegral(tt.samples, t0, t0.Add(time.Hour))
			if math.Abs(got.Joules-tt.want) > 1e-9 || got.Duration != tt.wantDur {
				t.Errorf("got %.6f J over %v, want %.6f J over %v", got.Joules, got.Duration, tt.want, tt.wantDur)
			}
		})
	}
}

func TestEnergyAvgWatts(t *testing.T) {
	tests := []struct {
		name string
		e    Energy
		want float64
	}{
		{"300 J over 3 s is 100 W", Energy{Joules: 300, Duration: 3 * time.Second}, 100},
		{"zero duration must not divide by zero", Energy{Joules: 5}, 0},
	}
	for _, tt := range tests {
		if got := tt.e.AvgWatts(); got != tt.want {
			t.Errorf("%s: AvgWatts = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestEnergyAgreesWithPowerIntegral(t *testing.T) {
	// A GPU whose counter advances exactly as its constant power says must
	// give the same joules both ways; this is the check the probe makes on
	// real hardware.
	var samples []Sample
	for i := range 41 {
		d := time.Duration(i) * 250 * time.Millisecond
		samples = append(samples, at(d, uint64(i)*75_000, 300_000)) // 300 W = 75 J per 250 ms
	}
	e := EnergyBetween(samples, t0, t0.Add(10*time.Second))
	p := PowerIntegral(samples, t0, t0.Add(10*time.Second))
	if math.Abs(e.Joules-3000) > 1e-6 || math.Abs(p.Joules-3000) > 1e-6 || math.Abs(e.AvgWatts()-300) > 1e-9 {
		t.Errorf("counter %.3f J (%.3f W), integral %.3f J; want 3000 J at 300 W", e.Joules, e.AvgWatts(), p.Joules)
	}
}

func TestByIndex(t *testing.T) {
	in := []Sample{{Index: 0, EnergyMJ: 1}, {Index: 1, EnergyMJ: 2}, {Index: 0, EnergyMJ: 3}, {Index: 2}}
	got := ByIndex(nil, in, 0)
	if len(got) != 2 || got[0].EnergyMJ != 1 || got[1].EnergyMJ != 3 {
		t.Errorf("ByIndex(0) = %+v, want samples 1 and 3 in order", got)
	}
	if got := ByIndex(nil, in, 7); len(got) != 0 {
		t.Errorf("ByIndex(absent GPU) = %+v, want none", got)
	}
}

func TestFieldString(t *testing.T) {
	tests := []struct {
		f    Field
		want string
		why  string
	}{
		{0, "none", "empty set must still print something"},
		{FieldPower, "power", "single bit uses the fast path"},
		{FieldThrottle, "throttle", "last named bit"},
		{FieldEnergy | FieldTemp, "energy|temp", "set prints in bit order"},
		{FieldAll, "power|energy|util|memory|temp|sm_clock|mem_clock|throttle", "every field"},
		{1 << 12, "0x1000", "unknown bit is shown, not dropped"},
		{FieldPower | 1<<12, "power|0x1000", "unknown bit after known ones"},
	}
	for _, tt := range tests {
		if got := tt.f.String(); got != tt.want {
			t.Errorf("%s: Field(%#x).String() = %q, want %q", tt.why, uint16(tt.f), got, tt.want)
		}
	}
}
