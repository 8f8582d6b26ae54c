//go:build cgo && linux

package gpu

import (
	"errors"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// eventReasonsSymbol is the NVML entry point added in driver r535 that
// replaces the deprecated throttle-reasons call. Calling a symbol the loaded
// library lacks would crash the process (go-nvml links with unresolved
// symbols ignored), so NewNVML looks it up first.
const eventReasonsSymbol = "nvmlDeviceGetCurrentClocksEventReasons"

// NVMLSource reads every GPU NVML reports. Create it with [NewNVML] or
// [Open]; it is not safe for concurrent use.
type NVMLSource struct {
	lib    nvml.Interface
	info   Info
	devs   []nvmlDevice
	now    func() time.Time
	closed bool
	// legacyReasons is set when the driver predates
	// nvmlDeviceGetCurrentClocksEventReasons.
	legacyReasons bool
}

// nvmlDevice is one GPU with its identity read once and the fields it has
// reported unsupported, which are not asked for again.
type nvmlDevice struct {
	Device
	h           nvml.Device
	unsupported Field
}

// Open loads the system's NVML library (libnvidia-ml.so.1) and returns a
// Source for every GPU. On a host without the library, driver or GPUs it
// returns an error wrapping ErrNoNVML.
func Open() (Source, error) {
	src, err := NewNVML(nvml.New())
	if err != nil {
		return nil, err
	}
	return src, nil
}

// NewNVML initializes lib and reads the identity (index, UUID, name) of every
// GPU once. Passing an nvml.Interface rather than using the package-level
// library is what lets tests run on go-nvml's mocks.
//
// A missing library, a driver that is not loaded, or zero GPUs give an error
// wrapping ErrNoNVML (and the nvml.Return, when there is one); any other
// failure is returned as is and lib is shut down again.
func NewNVML(lib nvml.Interface) (*NVMLSource, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		if absent(ret) {
			return nil, fmt.Errorf("initializing NVML: %w (%w)", ErrNoNVML, ret)
		}
		return nil, fmt.Errorf("initializing NVML: %w", ret)
	}
	s := &NVMLSource{lib: lib, now: time.Now}
	if err := s.discover(); err != nil {
		lib.Shutdown()
		return nil, err
	}
	return s, nil
}

func (s *NVMLSource) discover() error {
	// Versions are descriptive only; a driver that cannot report them is
	// still sampled.
	if v, ret := s.lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		s.info.DriverVersion = v
	}
	if v, ret := s.lib.SystemGetNVMLVersion(); ret == nvml.SUCCESS {
		s.info.NVMLVersion = v
	}
	s.legacyReasons = s.lib.Extensions().LookupSymbol(eventReasonsSymbol) != nil

	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("counting GPUs: %w", ret)
	}
	if n == 0 {
		return fmt.Errorf("counting GPUs: %w (NVML reports no GPUs)", ErrNoNVML)
	}
	s.devs = make([]nvmlDevice, n)
	s.info.Devices = make([]Device, n)
	for i := range n {
		h, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("opening GPU %d: %w", i, ret)
		}
		uuid, ret := h.GetUUID()
		if ret != nvml.SUCCESS {
			return fmt.Errorf("reading UUID of GPU %d: %w", i, ret)
		}
		name, ret := h.GetName()
		if ret != nvml.SUCCESS {
			return fmt.Errorf("reading name of GPU %d: %w", i, ret)
		}
		s.devs[i] = nvmlDevice{Device: Device{Index: i, UUID: uuid, Name: name}, h: h}
		s.info.Devices[i] = s.devs[i].Device
	}
	return nil
}

// absent reports whether ret means that this host has nothing to sample, as
// opposed to a failure worth reporting.
func absent(ret nvml.Return) bool {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED, nvml.ERROR_UNINITIALIZED:
		return true
	}
	return false
}

// Info returns the driver version and the GPUs found at creation. The
// Devices slice is shared and must not be modified.
func (s *NVMLSource) Info() Info { return s.info }

// errClosed is returned by Sample after Close; it wraps ErrNoNVML so a
// Sampler polling a closed source turns itself off.
var errClosed = fmt.Errorf("%w: source closed", ErrNoNVML)

// Sample appends one Sample per GPU to dst. It makes no allocation when dst
// has room and every reading succeeds or is unsupported.
func (s *NVMLSource) Sample(dst []Sample) ([]Sample, error) {
	if s.closed {
		return dst, errClosed
	}
	var errs []error
	for i := range s.devs {
		d := &s.devs[i]
		dst = append(dst, Sample{Time: s.now(), Index: d.Index, UUID: d.UUID, Name: d.Name})
		errs = s.read(d, &dst[len(dst)-1], errs)
	}
	return dst, errors.Join(errs...)
}

// read fills out from d. Energy is read first, right after the timestamp, so
// that the counter and Time line up as closely as possible.
func (s *NVMLSource) read(d *nvmlDevice, out *Sample, errs []error) []error {
	var ret nvml.Return
	if d.unsupported&FieldEnergy == 0 {
		out.EnergyMJ, ret = d.h.GetTotalEnergyConsumption()
		errs = d.settle(out, FieldEnergy, ret, errs)
	}
	if d.unsupported&FieldPower == 0 {
		out.PowerMW, ret = d.h.GetPowerUsage()
		errs = d.settle(out, FieldPower, ret, errs)
	}
	if d.unsupported&FieldUtil == 0 {
		var u nvml.Utilization
		u, ret = d.h.GetUtilizationRates()
		out.GPUUtil, out.MemUtil = u.Gpu, u.Memory
		errs = d.settle(out, FieldUtil, ret, errs)
	}
	if d.unsupported&FieldMemory == 0 {
		var m nvml.Memory
		m, ret = d.h.GetMemoryInfo()
		out.MemUsed, out.MemTotal = m.Used, m.Total
		errs = d.settle(out, FieldMemory, ret, errs)
	}
	if d.unsupported&FieldTemp == 0 {
		out.TempC, ret = d.h.GetTemperature(nvml.TEMPERATURE_GPU)
		errs = d.settle(out, FieldTemp, ret, errs)
	}
	if d.unsupported&FieldSMClock == 0 {
		out.SMClockMHz, ret = d.h.GetClockInfo(nvml.CLOCK_SM)
		errs = d.settle(out, FieldSMClock, ret, errs)
	}
	if d.unsupported&FieldMemClock == 0 {
		out.MemClockMHz, ret = d.h.GetClockInfo(nvml.CLOCK_MEM)
		errs = d.settle(out, FieldMemClock, ret, errs)
	}
	if d.unsupported&FieldThrottle == 0 {
		if s.legacyReasons {
			out.ThrottleReasons, ret = d.h.GetCurrentClocksThrottleReasons()
		} else {
			out.ThrottleReasons, ret = d.h.GetCurrentClocksEventReasons()
		}
		errs = d.settle(out, FieldThrottle, ret, errs)
	}
	return errs
}

// settle records the outcome of one reading. Unsupported readings are
// remembered so the driver is not asked again on every poll; a failed reading
// has its value zeroed so a half-written value never looks valid.
func (d *nvmlDevice) settle(out *Sample, f Field, ret nvml.Return, errs []error) []error {
	switch {
	case ret == nvml.SUCCESS:
		out.Valid |= f
		return errs
	case ret == nvml.ERROR_NOT_SUPPORTED:
		d.unsupported |= f
	case absent(ret):
		errs = append(errs, &FieldError{Index: d.Index, Field: f, Err: fmt.Errorf("%w (%w)", ErrNoNVML, ret)})
	default:
		errs = append(errs, &FieldError{Index: d.Index, Field: f, Err: ret})
	}
	zeroField(out, f)
	return errs
}

func zeroField(out *Sample, f Field) {
	switch f {
	case FieldPower:
		out.PowerMW = 0
	case FieldEnergy:
		out.EnergyMJ = 0
	case FieldUtil:
		out.GPUUtil, out.MemUtil = 0, 0
	case FieldMemory:
		out.MemUsed, out.MemTotal = 0, 0
	case FieldTemp:
		out.TempC = 0
	case FieldSMClock:
		out.SMClockMHz = 0
	case FieldMemClock:
		out.MemClockMHz = 0
	case FieldThrottle:
		out.ThrottleReasons = 0
	}
}

// Close shuts the library down. It is safe to call more than once; Sample
// after Close returns an error wrapping ErrNoNVML.
func (s *NVMLSource) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("shutting down NVML: %w", ret)
	}
	return nil
}

var _ Source = (*NVMLSource)(nil)
