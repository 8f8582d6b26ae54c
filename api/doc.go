// Package api implements what llmtap answers over HTTP, over plain Go parts and without Caddy.
// Everything it serves comes through one port, Host: a process's measurement engine and, when
// it has them, its timeline, mirror, SLO tracker, shadow loads and recorders (the Caddy
// module's process implements it; a benchmark serves an engine alone by embedding NoHost).
//
//   - the Connect service (llmtap.v1.TapService, proto/llmtap/v1): the engine (telemetry/tap)
//     to read, a Timeline to stream and, when the host has them, shadow load and recording
//     controls (Service);
//   - the JSON admin routes /llmtap/… (Summary, Requests, MirrorSummary, MirrorPairList,
//     TimelineWindows, ShadowLoads, SLOSummary, each over a Host) and their documents (SummaryDoc, ShadowDoc,
//     MirrorDoc, TimelineDoc), with the method check and count parameter every route shares
//     (AllowMethod, CountParam) and errors the host writes with their status (HTTPError);
//   - the host side of the service over llmtap's engines: a running timeline as a window
//     source (TimelineSource) and in-process shadow loads as a control (RunnerShadow).
//
// The Caddy modules mount these handlers on the admin listener and on site routes, and
// `llmtap bench` serves the Connect service on a listener of its own.
package api
