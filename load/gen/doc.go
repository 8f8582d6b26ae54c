// Package gen generates LLM API load the way a benchmark harness does, without a benchmark
// harness's blind spots.
//
// It has three parts, each usable alone:
//
//   - Arrival processes ([Constant], [Poisson], [Gamma], [RateSeries] and [Ramp], [Trace]) return
//     the next *intended* send time as an offset from the start of a run. They hold no clock and
//     take a seeded *rand.Rand, so a schedule is a pure function of its parameters and seed.
//     [ArrivalSpec] turns AIPerf's --arrival-pattern, --request-rate and --arrival-smoothness
//     into one.
//   - A [Pacer] waits until an intended time more precisely than a timer alone: it sleeps on a
//     timer until shortly before the deadline and spins for the rest.
//   - [Run] executes a schedule open loop (a slow response never holds back the next request;
//     at an in-flight ceiling a request is dropped and counted, or queued with its wait
//     measured) or closed loop (N workers sending back to back). Every request is stamped with
//     its intended, released, sent and done times, and the schedule lag (released − intended)
//     is summarised in [Counters], so a saturated generator shows up in its own figures
//     instead of hiding as a lower request rate.
package gen
