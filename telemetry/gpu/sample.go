package gpu

import (
	"errors"
	"time"
)

// ErrNoNVML reports that there is nothing to sample on this host: the NVML
// library could not be loaded, the driver is not running, no GPU is present,
// or the binary was built without cgo. Callers test for it with errors.Is and
// turn GPU sampling off rather than treating it as a failure.
var ErrNoNVML = errors.New("gpu: NVML not available")

// Field names one group of values in a [Sample]. Fields that come from the
// same NVML call share a bit, because the driver supports or rejects them
// together.
type Field uint16

// The fields a Source can fill. A bit is set in [Sample.Valid] only when the
// driver returned the value; a GPU that does not support a reading (for
// example the energy counter before Volta, or utilization under MIG) leaves
// the bit clear and the value zero.
const (
	FieldPower    Field = 1 << iota // PowerMW
	FieldEnergy                     // EnergyMJ
	FieldUtil                       // GPUUtil and MemUtil
	FieldMemory                     // MemUsed and MemTotal
	FieldTemp                       // TempC
	FieldSMClock                    // SMClockMHz
	FieldMemClock                   // MemClockMHz
	FieldThrottle                   // ThrottleReasons

	// FieldAll is every field above.
	FieldAll = FieldPower | FieldEnergy | FieldUtil | FieldMemory | FieldTemp |
		FieldSMClock | FieldMemClock | FieldThrottle
)

// Sample is one reading of one GPU. Values are in the units NVML reports so
// that no precision is lost; conversion to the OpenTelemetry units happens at
// export.
type Sample struct {
	// Time is when the Source began reading this GPU, from the Go clock (so
	// it carries a monotonic reading within one process).
	Time time.Time `json:"time"`
	// Index is the NVML device index, stable for the life of the driver.
	Index int `json:"index"`
	// UUID is the GPU's NVML UUID ("GPU-…"), the recommended hw.id.
	UUID string `json:"uuid"`
	// Name is the product name, for example "NVIDIA H200".
	Name string `json:"name"`

	// PowerMW is the board power draw in milliwatts. On Ampere and later
	// (except GA100) NVML reports a one-second average, on older GPUs an
	// instantaneous value.
	PowerMW uint32 `json:"power_mw"`
	// EnergyMJ is the total energy counter in millijoules since the driver
	// was loaded (Volta and later). Differences of this counter are the
	// most accurate energy figure NVML offers.
	EnergyMJ uint64 `json:"energy_mj"`
	// GPUUtil is the percentage of the last sample period (1/6 s to 1 s,
	// depending on the product) during which a kernel was running.
	GPUUtil uint32 `json:"gpu_util"`
	// MemUtil is the percentage of the same period during which device
	// memory was being read or written.
	MemUtil uint32 `json:"mem_util"`
	// MemUsed and MemTotal are device memory in bytes, as GetMemoryInfo
	// reports them (Used includes driver-reserved memory).
	MemUsed  uint64 `json:"mem_used"`
	MemTotal uint64 `json:"mem_total"`
	// TempC is the GPU die temperature in degrees Celsius.
	TempC uint32 `json:"temp_c"`
	// SMClockMHz and MemClockMHz are the current SM and memory clocks.
	SMClockMHz  uint32 `json:"sm_clock_mhz"`
	MemClockMHz uint32 `json:"mem_clock_mhz"`
	// ThrottleReasons is NVML's clocks-event-reasons bitmask (power cap,
	// thermal slowdown, idle, …) explaining why clocks are below maximum.
	ThrottleReasons uint64 `json:"throttle_reasons"`

	// Valid has a bit set for every field the driver returned. A clear bit
	// means "not supported or not read", never "zero".
	Valid Field `json:"valid"`
}

// Has reports whether every field in f was read for this sample.
func (s *Sample) Has(f Field) bool { return s.Valid&f == f }

// Device identifies one GPU a Source reads.
type Device struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	Name  string `json:"name"`
}

// Info describes the NVML installation a Source reads from.
type Info struct {
	// DriverVersion is the kernel driver version, for example "550.54.15"
	// (the hw.driver_version attribute).
	DriverVersion string `json:"driver_version"`
	// NVMLVersion is the NVML library version.
	NVMLVersion string `json:"nvml_version"`
	// Devices lists the GPUs in index order.
	Devices []Device `json:"devices"`
}

// Source reads the GPUs of one host.
//
// Sample appends one Sample per GPU to dst and returns the extended slice, so
// a caller that passes the previous result's [:0] polls without allocating.
// A reading a GPU does not support is left out of [Sample.Valid] and is not an
// error. Any other failure is returned as an error alongside the samples that
// could be read; an error that wraps [ErrNoNVML] means the library is gone and
// polling should stop.
//
// Close releases the library. A Source is not safe for concurrent use: the
// [Sampler] calls it from one goroutine.
type Source interface {
	Sample(dst []Sample) ([]Sample, error)
	Close() error
}
