package llmtap

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/internal/sensitive"
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

// tenantSource is a provisioned TenantConfig: it names the tenant of a request.
type tenantSource struct {
	header      string
	placeholder string
	key         []byte // api_key
}

// Check checks the config; it is also what provisioning checks (and the Caddyfile parser).
func (c *TenantConfig) Check() error {
	switch c.From {
	case tenant.SourceHeader:
		if c.Name == "" {
			return fmt.Errorf("tenant header: name the header")
		}
		if sensitive.Header(c.Name) {
			return fmt.Errorf("tenant header %q may carry credentials, which never become labels; use tenant api_key to bill by API key", c.Name)
		}
	case tenant.SourcePlaceholder:
		if !strings.HasPrefix(c.Name, "{") || !strings.HasSuffix(c.Name, "}") {
			return fmt.Errorf("tenant placeholder: %q is not a placeholder; expected one such as {http.auth.user.id}", c.Name)
		}
	case tenant.SourceAPIKey:
		if c.Name != "" {
			return fmt.Errorf("tenant api_key takes no name (got %q)", c.Name)
		}
	default:
		return fmt.Errorf("tenant: from %q is not a source; expected header, placeholder or api_key", c.From)
	}
	return nil
}

// provisionTenant turns h.Tenant into h.tenant.
func (h *Handler) provisionTenant() error {
	if h.Tenant == nil {
		return nil
	}
	c := h.Tenant
	if err := c.Check(); err != nil {
		return err
	}
	src := &tenantSource{}
	switch c.From {
	case tenant.SourceHeader:
		src.header = http.CanonicalHeaderKey(c.Name)
	case tenant.SourcePlaceholder:
		src.placeholder = c.Name
	case tenant.SourceAPIKey:
		key, err := fleetKey()
		if err != nil {
			return fmt.Errorf("tenant api_key: %w", err)
		}
		if key == nil {
			return fmt.Errorf("tenant api_key needs %s (at least 16 bytes, hex or base64): without it a key's tenant would change at every restart", FleetKeyEnv)
		}
		src.key = key
	}
	h.tenant = src
	return nil
}

// tenantOf returns the tenant of r, bounded; "" when the handler has no tenant source or r
// carries none.
func (h *Handler) tenantOf(r *http.Request) string {
	src := h.tenant
	if src == nil {
		return ""
	}
	switch {
	case src.header != "":
		return tenant.Bound(r.Header.Get(src.header))
	case src.placeholder != "":
		repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
		if repl == nil {
			return ""
		}
		return tenant.Bound(repl.ReplaceAll(src.placeholder, ""))
	default:
		return tenant.KeyID(src.key, tenant.APIKey(r.Header))
	}
}
