// Package api implements llmtap's Connect service (llmtap.v1.TapService, proto/llmtap/v1) over
// plain Go parts: a measurement engine (telemetry/tap) to read, a Timeline to stream, and,
// when the host has them, shadow load and recording controls. It knows nothing of Caddy: the
// Caddy modules mount its handler on the admin listener and on site routes, and `llmtap bench`
// serves it on a listener of its own.
package api
