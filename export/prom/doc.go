// Package prom holds the Prometheus collectors of the load generators' state (the mirror's
// counters and gate, every shadow load's counters): exporters sit above the engine and the
// generators, so that the engine (telemetry/promexport) imports no generator.
package prom
