//go:build cgo && linux

package gpu

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// readings are the values a mocked GPU reports; they differ per index so a
// test can tell samples apart.
type readings struct {
	powerMW, tempC, smMHz, memMHz uint32
	energyMJ, reasons, memUsed    uint64
	util                          nvml.Utilization
}

func readingsFor(i int) readings {
	k := uint32(i + 1)
	return readings{
		powerMW: 100_000 * k, tempC: 30 + k, smMHz: 1000 + k, memMHz: 2600 + k,
		energyMJ: 1_000_000 * uint64(k), reasons: nvml.ClocksEventReasonGpuIdle,
		memUsed: 1 << (30 + i), util: nvml.Utilization{Gpu: 10 * k, Memory: 5 * k},
	}
}

// wire gives every method NVMLSource.Sample calls a Func on a ready-made
// server device, which sets none of them (a nil Func panics).
func wire(d *server.Device, r readings) {
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return r.powerMW, nvml.SUCCESS }
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return r.energyMJ, nvml.SUCCESS }
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return r.util, nvml.SUCCESS }
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		return nvml.Memory{Total: d.MemoryInfo.Total, Used: r.memUsed, Free: d.MemoryInfo.Total - r.memUsed}, nvml.SUCCESS
	}
	d.GetTemperatureFunc = func(s nvml.TemperatureSensors) (uint32, nvml.Return) {
		if s != nvml.TEMPERATURE_GPU {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return r.tempC, nvml.SUCCESS
	}
	d.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		switch c {
		case nvml.CLOCK_SM:
			return r.smMHz, nvml.SUCCESS
		case nvml.CLOCK_MEM:
			return r.memMHz, nvml.SUCCESS
		}
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return r.reasons, nvml.SUCCESS }
}

// newH100 returns go-nvml's 8-GPU DGX H100 mock with every device wired.
func newH100(t testing.TB) (*server.Server, []*server.Device) {
	t.Helper()
	srv := dgxh100.New()
	devs := make([]*server.Device, len(srv.Devices))
	for i, d := range srv.Devices {
		devs[i] = d.(*server.Device)
		wire(devs[i], readingsFor(i))
	}
	return srv, devs
}

func TestNVMLSampleValues(t *testing.T) {
	srv, devs := newH100(t)
	src, err := NewNVML(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fixed := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	src.now = func() time.Time { return fixed }

	info := src.Info()
	if info.DriverVersion != "550.54.15" || len(info.Devices) != 8 {
		t.Fatalf("Info = %+v, want the DGX H100 mock's driver 550.54.15 and 8 GPUs", info)
	}

	got, err := src.Sample(nil)
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	if len(got) != 8 {
		t.Fatalf("got %d samples, want one per GPU (8)", len(got))
	}
	for i, s := range got {
		r := readingsFor(i)
		want := Sample{
			Time: fixed, Index: i, UUID: devs[i].UUID, Name: "NVIDIA H100 80GB HBM3",
			PowerMW: r.powerMW, EnergyMJ: r.energyMJ, GPUUtil: r.util.Gpu, MemUtil: r.util.Memory,
			MemUsed: r.memUsed, MemTotal: 85899345920, TempC: r.tempC,
			SMClockMHz: r.smMHz, MemClockMHz: r.memMHz, ThrottleReasons: r.reasons, Valid: FieldAll,
		}
		if s != want {
			t.Errorf("GPU %d:\n got %+v\nwant %+v", i, s, want)
		}
		if !strings.HasPrefix(s.UUID, "GPU-") {
			t.Errorf("GPU %d UUID %q lacks the GPU- prefix", i, s.UUID)
		}
	}

	// Identity is read once at creation, not on every poll.
	if _, err := src.Sample(got[:0]); err != nil {
		t.Fatal(err)
	}
	if n := len(devs[0].GetUUIDCalls()); n != 1 {
		t.Errorf("GetUUID called %d times over two polls, want 1", n)
	}
}

func TestNVMLNotSupported(t *testing.T) {
	tests := []struct {
		name  string
		field Field
		patch func(d *server.Device)
		calls func(d *server.Device) int
	}{
		{"energy counter before Volta", FieldEnergy,
			func(d *server.Device) {
				d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return 12345, nvml.ERROR_NOT_SUPPORTED }
			},
			func(d *server.Device) int { return len(d.GetTotalEnergyConsumptionCalls()) }},
		{"utilization under MIG", FieldUtil,
			func(d *server.Device) {
				d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
					return nvml.Utilization{Gpu: 99}, nvml.ERROR_NOT_SUPPORTED
				}
			},
			func(d *server.Device) int { return len(d.GetUtilizationRatesCalls()) }},
		{"clock event reasons", FieldThrottle,
			func(d *server.Device) {
				d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 7, nvml.ERROR_NOT_SUPPORTED }
			},
			func(d *server.Device) int { return len(d.GetCurrentClocksEventReasonsCalls()) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, devs := newH100(t)
			tt.patch(devs[0])
			src, err := NewNVML(srv)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			var got []Sample
			for range 3 {
				if got, err = src.Sample(got[:0]); err != nil {
					t.Fatalf("NOT_SUPPORTED must not be an error, got %v", err)
				}
			}
			s := got[0]
			if s.Has(tt.field) || s.Valid != FieldAll&^tt.field {
				t.Errorf("Valid = %v, want all but %v", s.Valid, tt.field)
			}
			zero := s
			zeroField(&zero, tt.field)
			if zero != s {
				t.Errorf("unsupported %v left a value behind: %+v", tt.field, s)
			}
			if n := tt.calls(devs[0]); n != 1 {
				t.Errorf("unsupported reading asked %d times in 3 polls, want 1 (remembered)", n)
			}
			if !got[1].Has(FieldAll) {
				t.Errorf("GPU 1 lost fields because GPU 0 lacks one: %v", got[1].Valid)
			}
		})
	}
}

func TestNVMLFieldFailure(t *testing.T) {
	srv, devs := newH100(t)
	devs[3].GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 77, nvml.ERROR_GPU_IS_LOST }
	src, err := NewNVML(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	got, err := src.Sample(nil)
	if len(got) != 8 {
		t.Fatalf("a failing GPU cost the others their samples: got %d", len(got))
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Index != 3 || fe.Field != FieldTemp || !errors.Is(err, nvml.ERROR_GPU_IS_LOST) {
		t.Fatalf("err = %v, want a FieldError for GPU 3 temp wrapping ERROR_GPU_IS_LOST", err)
	}
	if errors.Is(err, ErrNoNVML) {
		t.Error("a lost GPU must not read as the library being absent")
	}
	if got[3].Has(FieldTemp) || got[3].TempC != 0 || !got[3].Has(FieldPower) {
		t.Errorf("GPU 3 = %+v: temp must be invalid and zero, the rest valid", got[3])
	}
	if _, err2 := src.Sample(got[:0]); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("the same failure must give the same message each poll (for report-once): %q vs %q", err, err2)
	}
}

// bareLib returns a mock library with only what NewNVML needs before it
// counts devices.
func bareLib(initRet nvml.Return, count int) *mock.Interface {
	lib := &mock.Interface{
		InitFunc:                   func() nvml.Return { return initRet },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED },
		SystemGetNVMLVersionFunc:   func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return count, nvml.SUCCESS },
	}
	ext := &mock.ExtendedInterface{LookupSymbolFunc: func(string) error { return nil }}
	lib.ExtensionsFunc = func() nvml.ExtendedInterface { return ext }
	return lib
}

func TestNewNVMLAbsent(t *testing.T) {
	tests := []struct {
		name       string
		lib        *mock.Interface
		wantAbsent bool
		wantRet    nvml.Return
		shutdowns  int
	}{
		{"no libnvidia-ml.so.1", bareLib(nvml.ERROR_LIBRARY_NOT_FOUND, 0), true, nvml.ERROR_LIBRARY_NOT_FOUND, 0},
		{"library present, kernel driver not loaded", bareLib(nvml.ERROR_DRIVER_NOT_LOADED, 0), true, nvml.ERROR_DRIVER_NOT_LOADED, 0},
		{"driver fine but no GPUs", bareLib(nvml.SUCCESS, 0), true, nvml.SUCCESS, 1},
		{"permission denied is a real failure, not absence", bareLib(nvml.ERROR_NO_PERMISSION, 0), false, nvml.ERROR_NO_PERMISSION, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := NewNVML(tt.lib)
			if err == nil || src != nil {
				t.Fatalf("NewNVML = %v, %v; want an error", src, err)
			}
			if got := errors.Is(err, ErrNoNVML); got != tt.wantAbsent {
				t.Errorf("errors.Is(%v, ErrNoNVML) = %v, want %v", err, got, tt.wantAbsent)
			}
			if tt.wantRet != nvml.SUCCESS && !errors.Is(err, tt.wantRet) {
				t.Errorf("err %v does not wrap %v", err, tt.wantRet)
			}
			if n := len(tt.lib.ShutdownCalls()); n != tt.shutdowns {
				t.Errorf("Shutdown called %d times, want %d (only after a successful Init)", n, tt.shutdowns)
			}
		})
	}
}

func TestNVMLLegacyThrottleReasons(t *testing.T) {
	srv, devs := newH100(t)
	srv.LookupSymbolFunc = func(string) error { return errors.New("undefined symbol") }
	devs[0].GetCurrentClocksEventReasonsFunc = nil // calling it would panic, as the real one would crash
	devs[0].GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) { return 0x4, nvml.SUCCESS }
	srv.Devices = srv.Devices[:1]
	src, err := NewNVML(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	got, err := src.Sample(nil)
	if err != nil || got[0].ThrottleReasons != 0x4 || !got[0].Has(FieldThrottle) {
		t.Fatalf("got %+v, %v; want reasons 0x4 from the pre-r535 call", got, err)
	}
}

func TestNVMLLibraryGoneStopsSampler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, devs := newH100(t)
		// gone simulates the library being shut down underneath a running
		// sampler (NVML is refcounted process-wide): every call then
		// answers ERROR_UNINITIALIZED.
		var gone atomic.Bool
		for _, d := range devs {
			power := d.GetPowerUsageFunc
			d.GetPowerUsageFunc = func() (uint32, nvml.Return) {
				if gone.Load() {
					return 0, nvml.ERROR_UNINITIALIZED
				}
				return power()
			}
		}
		src, err := NewNVML(srv)
		if err != nil {
			t.Fatal(err)
		}
		var rec recorder
		s := NewSampler(src, Options{OnError: rec.onError})
		s.Subscribe(rec.onSamples)
		run := runSampler(t.Context(), s)
		time.Sleep(time.Second)
		synctest.Wait()
		gone.Store(true)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		select {
		case err := <-run.done:
			if !errors.Is(err, ErrNoNVML) {
				t.Errorf("Run returned %v, want ErrNoNVML", err)
			}
		default:
			t.Fatal("sampler still polling after the library went away")
		}
		times, sizes, errs := rec.snapshot()
		if len(times) != 6 || sizes[0] != 8 {
			t.Errorf("polls = %d (sizes %v), want 5 good ones and the one that found the library gone", len(times), sizes)
		}
		if len(errs) != 1 || !errors.Is(errs[0], ErrNoNVML) || !errors.Is(s.Err(), ErrNoNVML) {
			t.Errorf("OnError got %v, Err %v; want one ErrNoNVML", errs, s.Err())
		}
	})
}

func TestNVMLClose(t *testing.T) {
	srv, _ := newH100(t)
	src, err := NewNVML(srv)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if n := len(srv.ShutdownCalls()); n != 1 {
		t.Errorf("Shutdown called %d times, want 1: Close is idempotent", n)
	}
	got, err := src.Sample(nil)
	if !errors.Is(err, ErrNoNVML) || len(got) != 0 {
		t.Errorf("Sample after Close = %d samples, %v; want none and ErrNoNVML so a sampler stops", len(got), err)
	}
}

func TestNVMLUninitializedMidRunIsAbsent(t *testing.T) {
	srv, devs := newH100(t)
	src, err := NewNVML(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	devs[5].GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_UNINITIALIZED }
	_, err = src.Sample(nil)
	if !errors.Is(err, ErrNoNVML) || !errors.Is(err, nvml.ERROR_UNINITIALIZED) {
		t.Errorf("err = %v, want ErrNoNVML wrapping ERROR_UNINITIALIZED so the sampler stops", err)
	}
}

// TestOpenReal loads the host's real NVML. This development machine has no
// GPU, so Open must fail cleanly with ErrNoNVML; on a GPU host, run with
// LLMTAP_EXPECT_GPU=1 and it must succeed and read every GPU instead.
func TestOpenReal(t *testing.T) {
	src, err := Open()
	if os.Getenv("LLMTAP_EXPECT_GPU") != "1" {
		if !errors.Is(err, ErrNoNVML) || src != nil {
			t.Fatalf("Open() = %v, %v; want nil and ErrNoNVML on a host without a GPU", src, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Open on a GPU host: %v", err)
	}
	defer src.Close()
	got, err := src.Sample(nil)
	if err != nil || len(got) == 0 {
		t.Fatalf("Sample = %d samples, %v", len(got), err)
	}
	for _, s := range got {
		if !strings.HasPrefix(s.UUID, "GPU-") || !s.Has(FieldPower|FieldMemory) || s.PowerMW == 0 || s.MemTotal == 0 {
			t.Errorf("implausible real sample %+v", s)
		}
	}
}

// leanDevice answers only the calls Sample makes, with no call recording,
// so BenchmarkSample/lean measures NVMLSource's own overhead; the moq mocks
// append every call to a history slice.
type leanDevice struct {
	nvml.Device
	r readings
}

func (d leanDevice) GetPowerUsage() (uint32, nvml.Return) { return d.r.powerMW, nvml.SUCCESS }
func (d leanDevice) GetTotalEnergyConsumption() (uint64, nvml.Return) {
	return d.r.energyMJ, nvml.SUCCESS
}
func (d leanDevice) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	return d.r.util, nvml.SUCCESS
}
func (d leanDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	return nvml.Memory{Used: d.r.memUsed, Total: 1 << 36}, nvml.SUCCESS
}
func (d leanDevice) GetTemperature(nvml.TemperatureSensors) (uint32, nvml.Return) {
	return d.r.tempC, nvml.SUCCESS
}
func (d leanDevice) GetClockInfo(nvml.ClockType) (uint32, nvml.Return) {
	return d.r.smMHz, nvml.SUCCESS
}
func (d leanDevice) GetCurrentClocksEventReasons() (uint64, nvml.Return) {
	return d.r.reasons, nvml.SUCCESS
}

func BenchmarkSample(b *testing.B) {
	for _, gpus := range []int{1, 8} {
		b.Run("mock/gpus="+strconv.Itoa(gpus), func(b *testing.B) {
			srv, _ := newH100(b)
			srv.Devices = srv.Devices[:gpus]
			benchSource(b, srv, gpus)
		})
		b.Run("lean/gpus="+strconv.Itoa(gpus), func(b *testing.B) {
			srv, _ := newH100(b)
			for i := range gpus {
				srv.Devices[i] = leanDevice{Device: srv.Devices[i], r: readingsFor(i)}
			}
			srv.Devices = srv.Devices[:gpus]
			benchSource(b, srv, gpus)
		})
	}
}

func benchSource(b *testing.B, lib nvml.Interface, gpus int) {
	src, err := NewNVML(lib)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	buf := make([]Sample, 0, gpus)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if buf, err = src.Sample(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(gpus), "ns/gpu")
}
