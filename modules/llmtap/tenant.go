package llmtap

import (
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/telemetry/tenant"
)

// TenantConfig says where the tenant of a request comes from: who the request is billed to.
// The tenant is written to records (tenant), the trace and request spans, counted per tenant in
// /llmtap/summary's usage rows and in the counters of /metrics and the OTel export (never in
// the latency histograms), and shown by the dashboard, llmtap top and llmtap report.
//
// A tenant is cut to 128 bytes (a longer value keeps its start and ends in "~" and a hash of
// the whole), and the counters give their own series to the first 64 tenants the process
// sees; every later tenant is counted under "_other", and a tenant once given its series keeps
// it, so a counter never moves between series. Records and traces keep every tenant.
//
// Name a source no client can set to what it likes, or anyone could bill someone else: a
// header that a gateway in front sets after authenticating (and removes from what clients
// send), a placeholder of a module that verified the credential (a JWT claim), or the API key
// itself.
type TenantConfig struct {
	// From is the source: "header" (the value of the request header Name), "placeholder"
	// (Name, a Caddy placeholder such as {http.auth.user.id} or a verified JWT claim, resolved
	// when the request reaches llmtap, so the module that sets it must run before llmtap) or
	// "api_key" (the API key the request carries: an Authorization Bearer token, else
	// x-api-key, api-key or x-goog-api-key; the tenant is "key:" and 16 hex digits of an
	// HMAC-SHA256 of the key keyed with LLMTAP_FLEET_KEY, never the key). api_key requires
	// LLMTAP_FLEET_KEY to be set: with a key drawn per process, a key's tenant would change
	// at every restart and differ between instances. Required.
	From string `json:"from"`

	// Name is the header name (From "header"; a header that may carry credentials, such as
	// Authorization or X-Api-Key, is refused: use "api_key") or the placeholder (From
	// "placeholder"). Not used with "api_key".
	Name string `json:"name,omitempty"`
}

// Check checks the config; it is also what provisioning checks (and the Caddyfile parser).
func (c *TenantConfig) Check() error { return tenant.Check(c.From, c.Name) }

// provisionTenant turns h.Tenant into h.tenant.
func (h *Handler) provisionTenant() error {
	if h.Tenant == nil {
		return nil
	}
	var key []byte
	if h.Tenant.From == tenant.SourceAPIKey {
		k, err := fleetKey()
		if err != nil {
			return fmt.Errorf("tenant api_key: %w", err)
		}
		if k == nil {
			return fmt.Errorf("tenant api_key needs %s (at least 16 bytes, hex or base64): without it a key's tenant would change at every restart", FleetKeyEnv)
		}
		key = k
	}
	src, err := tenant.NewSource(h.Tenant.From, h.Tenant.Name, key)
	h.tenant = src
	return err
}

// tenantOf returns the tenant of r, bounded; "" when the handler has no tenant source or r
// carries none. A placeholder is resolved by the request's replacer.
func (h *Handler) tenantOf(r *http.Request) string {
	if h.tenant == nil {
		return ""
	}
	return h.tenant.Of(r.Header, func(p string) string {
		repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
		if repl == nil {
			return ""
		}
		return repl.ReplaceAll(p, "")
	})
}
