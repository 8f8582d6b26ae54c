// Package shadow runs shadow load inside a long-lived process (the llmtap proxy): a named
// [Runner] drives the load generator (load/gen) with a schedule that can be started,
// stopped, paused by guard rails, re-rated and reconfigured while it runs, without ever
// restarting the process or losing its counters. A runner in headroom mode raises its rate
// step by step and judges each step by the live and shadow requests measured meanwhile
// ([Runner.Observe]), to find how much more load the server takes within an SLO.
//
// The package knows nothing of Caddy: [Build] turns a user's workload.Spec into a [Config] (defaults,
// checks, request bodies, readiness probe), a [Registry] indexes the runners by name, and the
// proxy's app module decides their lifetime (one per name, adopted across config reloads) and
// feeds them the proxy's records.
// Requests go to a URL — in the proxy, the live route through the proxy itself, so they are
// measured there like live traffic — with a per-request mark that only the proxy can verify.
// Responses are read to the end and discarded.
//
// A runner's Start and Stop start and stop its sending (the admin API's shadow start and stop,
// as Pause and Resume are the guard rails'); Close(ctx) ends the runner itself, llmtap's one
// lifecycle (internal/lifecycle).
package shadow
