package scrape

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/gpu"
)

func TestDCGMSourceFixture(t *testing.T) {
	url, client := servePage(t, readFixture(t, "dcgm.prom"))
	at := time.Date(2026, 11, 30, 22, 3, 31, 0, time.UTC)
	src := NewDCGMSource(url, Options{Client: client, Now: func() time.Time { return at }})
	defer src.Close()

	got, err := src.Sample(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The idle GPU's values are those NVML gave for the same H200 in
	// telemetry/gpu/testdata/h200-samples.jsonl; DCGM reports used, free
	// and reserved apart and the source folds reserved into used and total
	// as NVML does.
	want := []gpu.Sample{
		{
			Time: at, Index: 0, UUID: "GPU-8fd57906-5df7-5b6f-29b0-637cdf8482ff", Name: "NVIDIA H200",
			PowerMW: 108364, EnergyMJ: 2219605, GPUUtil: 0, MemUtil: 0,
			MemUsed: 615 * mib, MemTotal: 143771 * mib, TempC: 33, SMClockMHz: 390, MemClockMHz: 3201,
			Valid: gpu.FieldAll &^ gpu.FieldThrottle,
		},
		{
			Time: at, Index: 1, UUID: "GPU-3c1e0b7a-91d2-4f6e-a8b4-2d5f7c9e1a03", Name: "NVIDIA H200",
			PowerMW: 612517, EnergyMJ: 918264730, GPUUtil: 97, MemUtil: 58,
			MemUsed: 128543 * mib, MemTotal: 143771 * mib, TempC: 61, SMClockMHz: 1980, MemClockMHz: 3201,
			Valid: gpu.FieldAll &^ gpu.FieldThrottle,
		},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d samples, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sample %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if want[0].MemTotal != 150754820096 {
		t.Fatalf("fixture total %d differs from NVML's 150754820096", want[0].MemTotal)
	}

	// A second poll appends to the previous result's [:0] without
	// carrying over anything from the first.
	again, err := src.Sample(got[:0])
	if err != nil || len(again) != 2 || again[1] != want[1] {
		t.Fatalf("second Sample = %+v, %v", again, err)
	}
}

const dcgmLabels0 = `gpu="0",UUID="GPU-a",modelName="NVIDIA H100 80GB HBM3"`

func TestDCGMFields(t *testing.T) {
	tests := []struct {
		name  string
		page  string
		n     int       // samples expected
		valid gpu.Field // Valid of the first sample
		check func(s gpu.Sample) bool
	}{
		{
			name:  "a page with only power marks only power valid",
			page:  "DCGM_FI_DEV_POWER_USAGE{" + dcgmLabels0 + "} 250.5\n",
			n:     1,
			valid: gpu.FieldPower,
			check: func(s gpu.Sample) bool { return s.PowerMW == 250500 && s.Name == "NVIDIA H100 80GB HBM3" },
		},
		{
			name:  "GPU_UTIL without MEM_COPY_UTIL leaves utilization invalid, as NVML reads both together",
			page:  "DCGM_FI_DEV_GPU_UTIL{" + dcgmLabels0 + "} 40\n",
			n:     1,
			valid: 0,
			check: func(s gpu.Sample) bool { return s.GPUUtil == 40 },
		},
		{
			name:  "FB_USED without FB_FREE cannot give a total, so memory is invalid",
			page:  "DCGM_FI_DEV_FB_USED{" + dcgmLabels0 + "} 1000\n",
			n:     1,
			valid: 0,
		},
		{
			name:  "without FB_RESERVED used and total are used and used+free",
			page:  "DCGM_FI_DEV_FB_USED{" + dcgmLabels0 + "} 1000\nDCGM_FI_DEV_FB_FREE{" + dcgmLabels0 + "} 3000\n",
			n:     1,
			valid: gpu.FieldMemory,
			check: func(s gpu.Sample) bool { return s.MemUsed == 1000*mib && s.MemTotal == 4000*mib },
		},
		{
			name:  "a negative reading is invalid, not clamped to zero",
			page:  "DCGM_FI_DEV_GPU_TEMP{" + dcgmLabels0 + "} -1\nDCGM_FI_DEV_SM_CLOCK{" + dcgmLabels0 + "} 1755\n",
			n:     1,
			valid: gpu.FieldSMClock,
			check: func(s gpu.Sample) bool { return s.TempC == 0 && s.SMClockMHz == 1755 },
		},
		{
			name:  "power beyond uint32 milliwatts is invalid",
			page:  "DCGM_FI_DEV_POWER_USAGE{" + dcgmLabels0 + "} 1e12\n",
			n:     1,
			valid: 0,
		},
		{
			name:  "the clock-event bitmask is read under its newer name when enabled",
			page:  "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{" + dcgmLabels0 + "} 4\n",
			n:     1,
			valid: gpu.FieldThrottle,
			check: func(s gpu.Sample) bool { return s.ThrottleReasons == 4 },
		},
		{
			name: "MIG instance series are skipped; whole-GPU series are kept",
			page: "DCGM_FI_DEV_GPU_TEMP{" + dcgmLabels0 + ",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"7\"} 99\n" +
				"DCGM_FI_DEV_GPU_TEMP{" + dcgmLabels0 + "} 45\n",
			n:     1,
			valid: gpu.FieldTemp,
			check: func(s gpu.Sample) bool { return s.TempC == 45 },
		},
		{
			name: "a series without a numeric gpu label cannot be placed and is dropped",
			page: "DCGM_FI_DEV_GPU_TEMP{UUID=\"GPU-a\"} 45\nDCGM_FI_DEV_GPU_TEMP{gpu=\"x\",UUID=\"GPU-b\"} 45\n",
			n:    0,
		},
		{
			name:  "GPUs are returned in index order whatever the page order",
			page:  "DCGM_FI_DEV_GPU_TEMP{gpu=\"3\",UUID=\"GPU-d\"} 40\nDCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"GPU-b\"} 41\n",
			n:     2,
			valid: gpu.FieldTemp,
			check: func(s gpu.Sample) bool { return s.Index == 1 && s.TempC == 41 },
		},
		{
			name: "a page with no DCGM fields gives no samples",
			page: "go_goroutines 12\n",
			n:    0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fams, err := ParsePage(strings.NewReader(tt.page), 0)
			if err != nil {
				t.Fatal(err)
			}
			got := appendDCGM(nil, fams, time.Time{}, map[dcgmKey]int{})
			if len(got) != tt.n {
				t.Fatalf("got %d samples, want %d: %+v", len(got), tt.n, got)
			}
			if tt.n == 0 {
				return
			}
			if got[0].Valid != tt.valid {
				t.Errorf("Valid = %v, want %v", got[0].Valid, tt.valid)
			}
			if tt.check != nil && !tt.check(got[0]) {
				t.Errorf("values wrong: %+v", got[0])
			}
		})
	}
}

// TestDCGMSourceUnderSampler drives the source with the real gpu.Sampler
// and a hand-fed ticker: an exporter error is reported through OnError and
// polling continues, because an exporter that is down may come back.
func TestDCGMSourceUnderSampler(t *testing.T) {
	page := readFixture(t, "dcgm.prom")
	var req atomic.Int32
	url, client := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		if req.Add(1) == 2 {
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(page)
	})
	src := NewDCGMSource(url, Options{Client: client})
	defer src.Close()

	ticks := make(chan time.Time)
	errs := make(chan error, 1)
	s := gpu.NewSampler(src, gpu.Options{
		NewTicker: func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} },
		OnError:   func(err error) { errs <- err },
	})
	polled := make(chan int, 1)
	s.Subscribe(func(b []gpu.Sample) { polled <- len(b) })
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	defer cancel()

	if n := <-polled; n != 2 {
		t.Fatalf("first poll gave %d samples, want 2", n)
	}
	ticks <- time.Time{}
	if err := <-errs; !strings.Contains(err.Error(), "503") || errors.Is(err, gpu.ErrNoNVML) {
		t.Fatalf("OnError got %v, want a 503 that is not ErrNoNVML", err)
	}
	ticks <- time.Time{}
	if n := <-polled; n != 2 {
		t.Fatalf("poll after the error gave %d samples, want 2", n)
	}
	cancel()
	if err := <-ran; err != nil || s.Err() != nil {
		t.Fatalf("Run returned %v, Err %v; an exporter failure must not turn the sampler off", err, s.Err())
	}
	if got := len(s.Recent(nil)); got != 4 {
		t.Fatalf("Recent holds %d samples, want 4", got)
	}
}

func TestDCGMSourceClose(t *testing.T) {
	url, client := servePage(t, []byte("go_goroutines 1\n"))
	src := NewDCGMSource(url, Options{Client: client})
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	dst := make([]gpu.Sample, 1, 4)
	got, err := src.Sample(dst)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Sample after Close: err = %v, want context.Canceled", err)
	}
	if len(got) != 1 {
		t.Fatalf("a failed Sample changed dst: len %d", len(got))
	}
}

func TestDCGMParsesFixtureWithoutNetwork(t *testing.T) {
	fams, err := ParsePage(bytes.NewReader(readFixture(t, "dcgm.prom")), 0)
	if err != nil {
		t.Fatal(err)
	}
	if k := DetectKind(fams); k != KindUnknown {
		t.Fatalf("a dcgm page was taken for an inference server: %q", k)
	}
}
