// Package adminguard decides who may use llmtap's admin routes: clients on loopback (or a
// unix socket), pages of loopback origins and hosts, and what a policy allows beyond them
// (the value of LLMTAP_ADMIN_ALLOW: network prefixes, origins, or "*"). It refuses with an
// error wrapping ErrRefused; the host answers it with 403.
package adminguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// ErrRefused marks the guard's refusals.
var ErrRefused = errors.New("llmtap admin routes are refused")

// Policy is what the guard allows beyond loopback.
type Policy struct {
	any     bool
	nets    []netip.Prefix
	origins map[string]bool // scheme://host[:port], lower case
	err     error           // why the configured value was ignored
	env     string          // the variable the value came from
}

// Parse reads a policy: the value of the environment variable env (named in the errors),
// a comma- or space-separated list of network prefixes, origins and "*". An invalid value
// allows nothing beyond loopback, and every refusal says why.
func Parse(v, env string) Policy {
	p := Policy{origins: map[string]bool{}, env: env}
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
		return Policy{env: env, err: fmt.Errorf("%s is ignored: %w", env, errors.Join(errs...))}
	}
	return p
}

// Check refuses r unless the policy allows its client and, when it has one, its Origin.
func (p Policy) Check(r *http.Request) error {
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

func (p Policy) refuse(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...) + "; llmtap admin routes answer loopback clients only unless " + p.env + " allows more"
	if p.err != nil {
		msg += " (" + p.err.Error() + ")"
	}
	return fmt.Errorf("%w: %s", ErrRefused, msg)
}

// peerAllowed reports whether a client at remoteAddr may use the routes.
func (p Policy) peerAllowed(remoteAddr string) bool {
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
func (p Policy) originAllowed(origin string) bool {
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

// CheckBrowser makes, for a listener of llmtap's own (the dashboard's), the checks Caddy's
// admin listener makes for browsers, before Check runs: the Host must name a loopback host,
// or one the policy allows (a page of a rebound DNS name reaches loopback with its own name as
// the Host), and a request another site made is refused (a browser says so in Sec-Fetch-Site;
// a no-cors request carries no Origin for the guard to check).
func (p Policy) CheckBrowser(r *http.Request) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
	}
	if !p.hostAllowed(r.Host) {
		return refuse("host %q is not a loopback host; the dashboard listener answers requests to localhost or a loopback address unless %s allows more", r.Host, p.env)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		if _, ok := r.Header["Origin"]; !ok || !p.originAllowed(r.Header.Get("Origin")) {
			return refuse("a request made by another site (Sec-Fetch-Site %s) is refused", site)
		}
	}
	return nil
}

// hostAllowed reports whether a request's Host header names the dashboard listener under a
// loopback name, or a host the policy allows.
func (p Policy) hostAllowed(hostport string) bool {
	if p.any {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Unmap().IsLoopback() {
			return true
		}
		for _, n := range p.nets {
			if n.Contains(ip.Unmap()) {
				return true
			}
		}
	}
	for o := range p.origins {
		if _, h, ok := strings.Cut(o, "://"); ok && strings.EqualFold(h, hostport) {
			return true
		}
	}
	return false
}
