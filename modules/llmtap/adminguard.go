package llmtap

import (
	"net/http"
	"os"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/internal/adminguard"
)

// AdminAllowEnv names the environment variable that opens llmtap's admin routes beyond
// loopback. By default every llmtap route on Caddy's admin listener (summaries, records,
// timeline, dashboard, shadow control, the Connect API) answers only clients connecting from a
// loopback address (or over a unix socket) and, when a browser sends an Origin header, only
// pages served from a loopback host ("localhost", 127.0.0.0/8, ::1), whatever address the
// admin listener is bound to: the routes expose traffic details and start load, and an admin
// listener bound to a wildcard address (admin :2019) or reached through a remote admin
// endpoint would otherwise hand them to the network.
//
// The value is a comma- or space-separated list of what else to allow: network prefixes of
// client addresses ("10.0.0.0/8", "192.0.2.7/32"), browser origins ("https://grafana.example:3000")
// or "*" for anything. It is read when Caddy sets up its admin listener's routes (once per
// admin listener); an invalid value allows nothing beyond loopback and says why in every
// refusal.
const AdminAllowEnv = "LLMTAP_ADMIN_ALLOW"

// guardAdmin wraps an admin route's handler so that requests from non-loopback clients and
// cross-origin browser pages are refused with 403 before it runs (see AdminAllowEnv). Apply
// it to every route llmtap adds to the admin listener; guardRoutes does it for a list.
func guardAdmin(policy adminguard.Policy, h caddy.AdminHandler) caddy.AdminHandler {
	return caddy.AdminHandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if err := policy.Check(r); err != nil {
			return refused(err)
		}
		return h.ServeHTTP(w, r)
	})
}

// guardRoutes applies guardAdmin, with the policy of AdminAllowEnv, to every route and returns
// them.
func guardRoutes(routes []caddy.AdminRoute) []caddy.AdminRoute {
	policy := adminPolicy()
	for i := range routes {
		routes[i].Handler = guardAdmin(policy, routes[i].Handler)
	}
	return routes
}

// adminPolicy is the policy of LLMTAP_ADMIN_ALLOW.
func adminPolicy() adminguard.Policy {
	return adminguard.Parse(os.Getenv(AdminAllowEnv), AdminAllowEnv)
}

// refused is the guards' answer to a refusal of package adminguard: 403, with its message.
func refused(err error) error {
	return caddy.APIError{HTTPStatus: http.StatusForbidden, Err: err}
}
