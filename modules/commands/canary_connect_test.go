package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/mock"
)

// TestCanaryConnect mirrors live traffic through real Caddy to a mock six times slower, with
// one look at 20 pairs, and runs `llmtap canary` reading GET /llmtap/mirror and reading the
// Connect API's MirrorStatus (Connect and gRPC-Web on the admin listener): each prints the same
// verdict, text and JSON alike, and exits 1 (worse). The handler's SLO judges both sides: the
// verdict compares their attainment on every surface. An unknown protocol is a usage error.
func TestCanaryConnect(t *testing.T) {
	base := mock.Config{Model: "canary-connect", TTFT: 10 * time.Millisecond, ITL: time.Millisecond, OutputTokens: 4}
	slower := base
	slower.TTFT = 60 * time.Millisecond
	_, liveURL := testkit.StartMock(t, base)
	_, mirrorURL := testkit.StartMock(t, slower)
	admin, site := testkit.FreeAddr(t), testkit.FreeAddr(t)
	testkit.StartCaddyfile(t, t.Name(), fmt.Sprintf(`{
	admin %s
	log {
		level ERROR
	}
}
http://%s {
	llmtap {
		slo fast {
			ttft 1s
		}
		mirror %s {
			sample 100%%
			verdict {
				first_look 20
				looks 1
			}
		}
	}
	reverse_proxy %s {
		flush_interval -1
	}
}`, admin, site, mirrorURL, strings.TrimPrefix(liveURL, "http://")))
	body := []byte(`{"model": "canary-connect", "stream": true, "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}`)
	c := &http.Client{Timeout: 30 * time.Second}
	for range 24 {
		resp, err := c.Post("http://"+site+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	run := func(args ...string) (int, string) {
		t.Helper()
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		code, err := canaryMain(ctx, &out, flag.NewFlagSet("llmtap canary", flag.ContinueOnError),
			append([]string{"--admin", admin, "--interval", "100ms", "--timeout", "20s"}, args...))
		if err != nil && code != 1 {
			t.Logf("llmtap canary %q: exit %d: %v", args, code, err)
		}
		return code, out.String()
	}
	// The JSON route first: it waits until the look of 20 pairs is reached.
	wantCode, wantJSON := run("--json")
	var vs []mirror.ModelVerdict
	if err := json.Unmarshal([]byte(wantJSON), &vs); err != nil || len(vs) != 1 || vs[0].Outcome != mirror.VerdictWorse || vs[0].Pairs != 20 || wantCode != 1 {
		t.Fatalf("llmtap canary --json (the JSON route): exit %d, %s (%v): want worse at 20 pairs, exit 1", wantCode, wantJSON, err)
	}
	// The handler's SLO (TTFT ≤ 1 s) judges both sides: both meet it (10 and 60 ms; the mirror's
	// records carry the handler's SLOs too, or it would meet none); Connect must carry the same
	// comparison (compared below).
	var attain *mirror.MetricVerdict
	for i, m := range vs[0].Comparisons {
		if m.Name == mirror.SLOAttainment {
			attain = &vs[0].Comparisons[i]
		}
	}
	if attain == nil || attain.Base < 0.9 || attain.Other < 0.9 || attain.Count != 20 || attain.Outcome == mirror.VerdictWorse {
		t.Errorf("SLO attainment %+v: want live and mirror ≥ 0.9 over 20 pairs, not worse", attain)
	}
	_, wantText := run()
	for _, protocol := range []string{"connect", "grpcweb"} {
		code, got := run("--json", "--protocol", protocol)
		if code != wantCode || got != wantJSON {
			t.Errorf("--protocol %s --json: exit %d\n%s\nthe JSON route's: exit %d\n%s", protocol, code, got, wantCode, wantJSON)
		}
		if _, got := run("--protocol", protocol); got != wantText || !strings.Contains(got, mirror.SLOAttainment) {
			t.Errorf("--protocol %s: printed\n%s\nthe JSON route's:\n%s", protocol, got, wantText)
		}
	}
	if code, _ := run("--protocol", "carrier-pigeon"); code != 2 {
		t.Errorf("--protocol carrier-pigeon: exit %d, want 2", code)
	}
}
