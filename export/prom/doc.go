// Package prom exposes llmtap's measurements and state as Prometheus collectors: the request
// histograms and counters a record sink feeds (Requests, Usage), and collectors that read the
// GPU sampler, the recorders, the SLO tracker, the headroom estimators, the mirror and the
// shadow loads at scrape time (GPU, Recorder, SLO, Headroom, Mirror, Shadow). Exporters sit
// above the engine (telemetry/) and the load generators (shadow/), which import no exporter.
// It knows nothing of the host: the sources are functions, and the host creates the collectors
// once per process and registers them in each registry it gets, so counts survive config
// reloads.
//
// The series' names, labels and help texts are a contract (docs/, the metric tables of the
// README): change them only with the docs.
package prom
