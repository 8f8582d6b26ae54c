// Package gpu samples NVIDIA GPUs through NVML (power, total energy,
// utilization, memory, temperature, clocks and clock-event reasons) so that
// llmtap can put GPU behaviour on the same timeline as the requests it
// measures.
//
// The package has three layers. A [Source] reads one [Sample] per GPU when
// asked; the NVML-backed source lives behind the cgo build tag so that a
// cgo-free build still compiles and simply reports [ErrNoNVML]. A [Sampler]
// polls a Source on an interval from a goroutine it owns, keeps a bounded ring
// of recent samples and hands each poll to subscribers. [EnergyBetween] and
// [PowerIntegral] turn recorded samples into joules for a time window, which is
// how per-request or per-run energy is attributed. A [Runner] keeps one
// Sampler running across reconfigurations of its interval: Sampler.Run(ctx) is
// the loop, Runner.Configure starts or reconfigures it and Runner.Close(ctx)
// stops it (llmtap's one lifecycle, internal/lifecycle).
//
// Names map onto the OpenTelemetry hardware conventions: PowerMW is hw.power
// (W after division), EnergyMJ is the hw.energy counter (J after division),
// GPUUtil and MemUtil are hw.gpu.utilization and hw.gpu.memory.utilization (as
// fractions after division by 100), MemUsed and MemTotal are
// hw.gpu.memory.usage and hw.gpu.memory.limit, TempC is hw.temperature, and
// UUID is the hw.id attribute. Clocks and throttle reasons have no semantic
// convention and are exported under llmtap's own names.
//
// Nothing in this package imports Caddy or zap.
package gpu
