// Package client reads a running llmtap's API as its commands do: a Connect client in one of
// the wire protocols (New), and the mirror's canary verdicts, read from the JSON route or the
// Connect API and polled until every model has one (Mirror, WaitVerdicts), and the JSON
// routes' documents (Get). It neither prints nor listens.
package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"connectrpc.com/connect"
)

// New returns the HTTP client and Connect options of a wire protocol: connect (HTTP/1.1),
// grpc (HTTP/2 cleartext) or grpcweb. The client ignores proxy settings of the environment.
func New(protocol string) (*http.Client, []connect.ClientOption, error) {
	switch protocol {
	case "connect":
		return &http.Client{Transport: &http.Transport{Proxy: nil}}, nil, nil
	case "grpcweb":
		return &http.Client{Transport: &http.Transport{Proxy: nil}}, []connect.ClientOption{connect.WithGRPCWeb()}, nil
	case "grpc":
		tr := &http.Transport{Proxy: nil, Protocols: new(http.Protocols)}
		tr.Protocols.SetUnencryptedHTTP2(true)
		tr.Protocols.SetHTTP2(true)
		return &http.Client{Transport: tr}, []connect.ClientOption{connect.WithGRPC()}, nil
	}
	return nil, nil, fmt.Errorf("protocol %q: want connect, grpc or grpcweb", protocol)
}

// Base is the base URL of an API address: host:port or a URL, without a trailing slash.
func Base(addr string) string {
	base := strings.TrimRight(addr, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return base
}

// Get reads url with c and returns its body (at most 64 MiB); a status other than 200 is an
// error that quotes the start of the body.
func Get(ctx context.Context, c *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}
