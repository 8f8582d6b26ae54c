package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmtap/llmtap/telemetry/gpu"
)

// steadySource is a GPU host at a constant 300 W whose energy counter
// advances exactly with time, so counter and integral must agree.
type steadySource struct {
	start time.Time
	info  gpu.Info
}

func newSteady(gpus int) *steadySource {
	s := &steadySource{start: time.Now(), info: gpu.Info{DriverVersion: "570.00", NVMLVersion: "12.570.00"}}
	for i := range gpus {
		s.info.Devices = append(s.info.Devices, gpu.Device{Index: i, UUID: fmt.Sprintf("GPU-%d", i), Name: "Fake H200"})
	}
	return s
}

func (s *steadySource) Info() gpu.Info { return s.info }
func (s *steadySource) Close() error   { return nil }

func (s *steadySource) Sample(dst []gpu.Sample) ([]gpu.Sample, error) {
	now := time.Now()
	for _, d := range s.info.Devices {
		dst = append(dst, gpu.Sample{
			Time: now, Index: d.Index, UUID: d.UUID, Name: d.Name,
			PowerMW: 300_000, EnergyMJ: uint64(now.Sub(s.start).Milliseconds()) * 300,
			MemTotal: 1 << 34, MemUsed: 1 << 30, TempC: 40,
			Valid: gpu.FieldPower | gpu.FieldEnergy | gpu.FieldMemory | gpu.FieldTemp,
		})
	}
	return dst, nil
}

func TestRunWritesSamplesAndSummary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "samples.jsonl")
		var stdout, stderr bytes.Buffer
		open := func() (gpu.Source, error) { return newSteady(2), nil }
		code := run(t.Context(), []string{"--interval", "250ms", "--duration", "2s", "--out", out}, &stdout, &stderr, open)
		if code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
		}
		file, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(file, stdout.Bytes()) {
			t.Error("--out file differs from stdout")
		}
		if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
			t.Errorf("--out mode %v, want 0600", fi.Mode().Perm())
		}
		var n int
		sc := bufio.NewScanner(bytes.NewReader(file))
		for sc.Scan() {
			var s gpu.Sample
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				t.Fatalf("line %d is not a Sample: %v", n+1, err)
			}
			n++
		}
		// Polls at 0, 250, …, 1750 ms (the 2 s deadline ends the run before
		// or at the ninth tick), two GPUs each.
		if n < 16 || n > 18 {
			t.Errorf("%d JSON lines, want 16-18 (8-9 polls × 2 GPUs)", n)
		}
		log := stderr.String()
		for _, want := range []string{"driver 570.00", "2 GPU(s)", "GPU 1 Fake H200 GPU-1", "power W min/mean/max 300.0 / 300.0 / 300.0", "+0.00%"} {
			if !strings.Contains(log, want) {
				t.Errorf("stderr lacks %q:\n%s", want, log)
			}
		}
	})
}

func TestRunWithoutNVML(t *testing.T) {
	var stdout, stderr bytes.Buffer
	open := func() (gpu.Source, error) { return nil, fmt.Errorf("initializing NVML: %w", gpu.ErrNoNVML) }
	if code := run(context.Background(), nil, &stdout, &stderr, open); code != 2 {
		t.Errorf("exit %d, want 2 for a host without NVML", code)
	}
	if !strings.Contains(stderr.String(), "NVML not available") || stdout.Len() != 0 {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	if code := run(context.Background(), nil, &stdout, &stderr, func() (gpu.Source, error) { return nil, errors.New("boom") }); code != 1 {
		t.Errorf("exit %d, want 1 for any other open failure", code)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		why  string
	}{
		{[]string{"--interval", "0s"}, "a zero interval would spin"},
		{[]string{"--duration", "-1s"}, "negative duration"},
		{[]string{"--bogus"}, "unknown flag"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		opened := false
		open := func() (gpu.Source, error) { opened = true; return newSteady(1), nil }
		if code := run(context.Background(), tt.args, &stdout, &stderr, open); code != 1 || opened {
			t.Errorf("%s: exit %d (opened %v), want 1 before opening NVML", tt.why, code, opened)
		}
	}
}

func TestSummarize(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	all := gpu.FieldAll
	samples := []gpu.Sample{
		{Time: t0, PowerMW: 100_000, EnergyMJ: 0, GPUUtil: 0, TempC: 30, SMClockMHz: 345, ThrottleReasons: 1, Valid: all},
		{Time: t0.Add(time.Second), PowerMW: 300_000, EnergyMJ: 200_000, GPUUtil: 100, TempC: 50, SMClockMHz: 1980, ThrottleReasons: 4, Valid: all},
		{Time: t0.Add(2 * time.Second), PowerMW: 200_000, EnergyMJ: 450_000, Valid: gpu.FieldPower | gpu.FieldEnergy},
	}
	g := summarize(gpu.Device{}, samples)
	checks := []struct {
		name      string
		got, want float64
	}{
		{"power min", g.powerW.lo, 100}, {"power mean", g.powerW.mean(), 200}, {"power max", g.powerW.hi, 300},
		{"util mean skips the sample without util", g.gpuUtil.mean(), 50},
		{"temp max", g.tempC.hi, 50}, {"sm clock min", g.smMHz.lo, 345},
		{"counter joules", g.counter.Joules, 450}, {"integral joules (200 + 250)", g.integral.Joules, 450},
		{"throttle reasons are ORed", float64(g.reasons), 5},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if g.valid != gpu.FieldPower|gpu.FieldEnergy {
		t.Errorf("fields in every sample = %v, want power|energy", g.valid)
	}
}
