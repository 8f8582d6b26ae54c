// Package promexport exposes llmtap's measurements as Prometheus collectors: the request
// histograms and counters a record sink feeds (Requests), and collectors that read the GPU
// sampler, the mirror and the shadow loads at scrape time (GPU, Mirror, Shadow). It knows
// nothing of the host: the sources are functions, and the host creates the collectors once per
// process and registers them in each registry it gets, so counts survive config reloads.
//
// The series' names, labels and help texts are a contract (docs/, the metric tables of the
// README): change them only with the docs.
package promexport
