package llmtap

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2"
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
// or "*" for anything. It is read once, when the process first serves an llmtap admin route;
// an invalid value allows nothing beyond loopback and says why in every refusal.
const AdminAllowEnv = "LLMTAP_ADMIN_ALLOW"

// errAdminRefused marks the guard's refusals.
var errAdminRefused = errors.New("llmtap admin routes are refused")

// guardAdmin wraps an admin route's handler so that requests from non-loopback clients and
// cross-origin browser pages are refused with 403 before it runs (see AdminAllowEnv). Apply
// it to every route llmtap adds to the admin listener; guardRoutes does it for a list.
func guardAdmin(h caddy.AdminHandler) caddy.AdminHandler {
	return caddy.AdminHandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		if err := adminPolicyFromEnv().check(r); err != nil {
			return err
		}
		return h.ServeHTTP(w, r)
	})
}

// guardRoutes applies guardAdmin to every route and returns them.
func guardRoutes(routes []caddy.AdminRoute) []caddy.AdminRoute {
	for i := range routes {
		routes[i].Handler = guardAdmin(routes[i].Handler)
	}
	return routes
}

// adminPolicyFromEnv is the policy of LLMTAP_ADMIN_ALLOW, parsed once.
var adminPolicyFromEnv = sync.OnceValue(func() adminPolicy { return parseAdminPolicy(os.Getenv(AdminAllowEnv)) })

// adminPolicy is what the guard allows beyond loopback.
type adminPolicy struct {
	any     bool
	nets    []netip.Prefix
	origins map[string]bool // scheme://host[:port], lower case
	err     error           // why the configured value was ignored
}

// parseAdminPolicy reads a LLMTAP_ADMIN_ALLOW value.
func parseAdminPolicy(v string) adminPolicy {
	p := adminPolicy{origins: map[string]bool{}}
	var errs []error
	for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		switch {
		case item == "*":
			p.any = true
		case strings.Contains(item, "://"):
			u, err := url.Parse(item)
			if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
				errs = append(errs, fmt.Errorf("%q is not an origin; expected scheme://host[:port]", item))
				continue
			}
			p.origins[strings.ToLower(u.Scheme+"://"+u.Host)] = true
		default:
			pfx, err := netip.ParsePrefix(item)
			if err != nil {
				errs = append(errs, fmt.Errorf("%q is not a network prefix (10.0.0.0/8, 192.0.2.7/32) or an origin (https://host:port)", item))
				continue
			}
			p.nets = append(p.nets, pfx.Masked())
		}
	}
	if len(errs) > 0 {
		return adminPolicy{err: fmt.Errorf("%s is ignored: %w", AdminAllowEnv, errors.Join(errs...))}
	}
	return p
}

// check returns a 403 APIError unless the policy allows r's client and origin.
func (p adminPolicy) check(r *http.Request) error {
	if !p.peerAllowed(r.RemoteAddr) {
		return p.refuse("client %s is not on a loopback address", r.RemoteAddr)
	}
	// Browsers send Origin on cross-origin requests and on every POST; a page from elsewhere
	// must not drive the routes through a browser that runs on the admin's machine.
	if origin, ok := r.Header["Origin"]; ok && !p.originAllowed(strings.Join(origin, ",")) {
		return p.refuse("origin %q is not a loopback origin", strings.Join(origin, ","))
	}
	return nil
}

func (p adminPolicy) refuse(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...) + "; llmtap admin routes answer loopback clients only unless " + AdminAllowEnv + " allows more"
	if p.err != nil {
		msg += " (" + p.err.Error() + ")"
	}
	return refused(msg)
}

// refused is the guards' answer (403, wrapping errAdminRefused); msg says why.
func refused(msg string) error {
	return caddy.APIError{HTTPStatus: http.StatusForbidden, Err: fmt.Errorf("%w: %s", errAdminRefused, msg)}
}

// peerAllowed reports whether a client at remoteAddr may use the routes.
func (p adminPolicy) peerAllowed(remoteAddr string) bool {
	if remoteAddr == "" || remoteAddr == "@" {
		return true // a unix socket: its file permissions decide
	}
	host := remoteAddr
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	if ip.IsLoopback() || p.any {
		return true
	}
	for _, n := range p.nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// originAllowed reports whether a page of origin may use the routes.
func (p adminPolicy) originAllowed(origin string) bool {
	if p.any {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null", garbage, several values
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return true
	}
	return p.origins[strings.ToLower(u.Scheme+"://"+u.Host)]
}
