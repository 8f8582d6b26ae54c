package llmtap_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/llmtap/llmtap/internal/keyparse"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/tenant"
)

// usageRow is the part of a /llmtap/summary usage row the tests read.
type usageRow struct {
	Tenant       string `json:"tenant"`
	Model        string `json:"model"`
	Class        string `json:"class"`
	Requests     int64  `json:"requests"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
}

// usageRows fetches the summary's usage rows of model.
func (p *proxy) usageRows(t *testing.T, model string) map[string]usageRow {
	t.Helper()
	waitIdle(t)
	var doc struct {
		RecordsDropped uint64 `json:"records_dropped"`
		Summary        struct {
			Usage []usageRow `json:"usage"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(p.adminGet(t, "/llmtap/summary"), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.RecordsDropped != 0 {
		t.Fatalf("%d records dropped: the sums cannot be exact", doc.RecordsDropped)
	}
	out := map[string]usageRow{}
	for _, u := range doc.Summary.Usage {
		if u.Model == model {
			out[u.Tenant] = u
		}
	}
	return out
}

// tenantCounts returns llmtap_tenant_requests_total of model by tenant.
func (p *proxy) tenantCounts(t *testing.T, model string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, s := range p.metricSamples(t, "llmtap_tenant_requests_total") {
		if s.labels["model"] == model {
			out[s.labels["tenant"]] += s.value
		}
	}
	return out
}

// sendTenants sends one small streamed chat request per tenant in tenants through url (with
// usage, so every token count is the server's), 16 at a time.
func sendTenants(t *testing.T, c *http.Client, url, model string, tenants []string) {
	t.Helper()
	var wg sync.WaitGroup
	work := make(chan string)
	var failed sync.Once
	for range 16 {
		wg.Go(func() {
			for tn := range work {
				req, err := testkit.NewPost(t.Context(), url, "", chatBody(model, 2, true, true))
				if err != nil {
					t.Error(err)
					continue
				}
				req.Header.Set("X-Tenant", tn)
				resp, err := c.Do(req)
				if err == nil {
					_, err = bytes.NewBuffer(nil).ReadFrom(resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %s", resp.Status)
					}
				}
				if err != nil {
					failed.Do(func() { t.Errorf("tenant %q: %v", tn, err) })
				}
			}
		})
	}
	for _, tn := range tenants {
		work <- tn
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// TestTenants10000 sends requests of 10,000 tenants through Caddy with `tenant header
// X-Tenant` and checks the one folding rule on every surface: /metrics and the summary's usage
// rows give at most labelcap.DefaultMax tenants their own series and fold the rest into
// _other; the sums over tenants are exact (every request, every token, counted once); and a
// tenant once given its own series keeps it: after 9,900 more tenants, the first ones'
// counters went up by exactly their new requests, in the same series, and no later tenant took
// a series. Records keep every tenant, unfolded.
func TestTenants10000(t *testing.T) {
	llmtap.ResetTenantLabels()
	model := ownName("tenant-model-")
	t.Cleanup(func() { llmtap.DeleteModelSeries(model); llmtap.ResetTenantLabels() })
	up := startUpstream(t, mock.Config{OutputTokens: 2, Seed: 7})
	p, _ := loadProxy(t, "", site{body: "\tllmtap {\n\t\ttenant header X-Tenant\n\t}\n\treverse_proxy " + up.addr})
	c := newClient(t)
	url := p.sites[0] + "/v1/chat/completions"
	const total, first = 10000, 100
	names := make([]string, total)
	for i := range names {
		names[i] = fmt.Sprintf("team-%05d", i)
	}
	// One tenant name of 1 KB: cut to 128 bytes with a hash, in records and labels alike.
	names[first-1] = strings.Repeat("L", 1024)

	// Phase 1: the first 100 tenants; 64 of them get their own series.
	sendTenants(t, c, url, model, names[:first])
	before := p.tenantCounts(t, model)
	own1 := map[string]float64{}
	var sum1 float64
	for tn, v := range before {
		sum1 += v
		if tn != labelcap.Other {
			own1[tn] = v
		}
	}
	if len(own1) != labelcap.DefaultMax || sum1 != first {
		t.Fatalf("after %d tenants: %d with own series (want %d), sum %v (want %d)", first, len(own1), labelcap.DefaultMax, sum1, first)
	}
	for tn := range own1 {
		if len(tn) > labelcap.MaxLen {
			t.Errorf("a tenant label of %d bytes", len(tn))
		}
	}

	// Phase 2: the 9,900 others, and the first 100 once more.
	sendTenants(t, c, url, model, append(names[first:], names[:first]...))
	after := p.tenantCounts(t, model)
	var sum2 float64
	for tn, v := range after {
		sum2 += v
		if tn == labelcap.Other {
			continue
		}
		prev, ok := own1[tn]
		if !ok {
			t.Errorf("tenant %q got its own series after the cap was reached", tn)
			continue
		}
		if v != prev+1 {
			t.Errorf("tenant %q: %v requests, want %v (its series must keep every request of it)", tn, v, prev+1)
		}
	}
	if len(after) != labelcap.DefaultMax+1 {
		t.Errorf("/metrics has %d tenant series for the model, want %d + %s", len(after), labelcap.DefaultMax, labelcap.Other)
	}
	if sum2 != total+first {
		t.Errorf("llmtap_tenant_requests_total sums to %v, want %d", sum2, total+first)
	}
	if want := float64(total+first) - float64(labelcap.DefaultMax)*2; after[labelcap.Other] != want {
		t.Errorf("_other has %v requests, want %v", after[labelcap.Other], want)
	}

	// Tokens: the mock reports usage on every request, so the sum over tenants is exact.
	var out, in float64
	for _, s := range p.metricSamples(t, "llmtap_tokens_total") {
		if s.labels["model"] != model {
			continue
		}
		switch s.labels["type"] {
		case "output":
			out += s.value
		case "input":
			in += s.value
		}
	}
	if out != 2*(total+first) {
		t.Errorf("output tokens over tenants %v, want %d", out, 2*(total+first))
	}

	// The summary's usage rows fold the same tenants and agree with /metrics.
	rows := p.usageRows(t, model)
	var reqs, rowIn int64
	for tn, u := range rows {
		reqs += u.Requests
		rowIn += u.InputTokens
		if float64(u.Requests) != after[tn] {
			t.Errorf("tenant %q: %d requests in the summary, %v in /metrics", tn, u.Requests, after[tn])
		}
	}
	if len(rows) != len(after) || reqs != total+first || float64(rowIn) != in {
		t.Errorf("summary: %d rows, %d requests, %d input tokens; /metrics: %d series, %v input tokens", len(rows), reqs, rowIn, len(after), in)
	}

	// Records keep each request's own tenant, bounded in length.
	seen := 0
	for _, r := range p.records(t) {
		if r.Model != model {
			continue
		}
		seen++
		if len(r.Tenant) > labelcap.MaxLen || !strings.HasPrefix(r.Tenant, "team-") && r.Tenant != labelcap.Shorten(names[first-1]) {
			t.Errorf("record %s has tenant %q", r.RequestID, r.Tenant)
		}
	}
	if seen == 0 {
		t.Error("no record of the test's model")
	}
}

// TestTenantSources checks the api_key and placeholder sources through Caddy: a Bearer key
// becomes "key:" and a keyed hash that never shows the key (records, /metrics, the summary),
// the same key the same tenant, and basic_auth's verified user id, read through the
// placeholder {http.auth.user.id}, names the tenant.
func TestTenantSources(t *testing.T) {
	llmtap.ResetTenantLabels()
	t.Cleanup(llmtap.ResetTenantLabels)
	fleet := strings.Repeat("ab", 32)
	t.Setenv(llmtap.FleetKeyEnv, fleet)
	model := ownName("tenant-src-")
	t.Cleanup(func() { llmtap.DeleteModelSeries(model) })
	up := startUpstream(t, mock.Config{OutputTokens: 2, Seed: 9})
	// basic_auth user "alice", password "wonderland" (bcrypt at cost 4, so that checking it
	// costs little).
	const hash = "$2a$04$hRGM1NmD4G0auEuHQm8LweufAPJq49Kh/W6mudZpy4G2h7qIXLszK"
	p, _ := loadProxy(t, "",
		site{body: "\tllmtap {\n\t\ttenant api_key\n\t}\n\treverse_proxy " + up.addr},
		site{body: "\tbasic_auth {\n\t\talice " + hash + "\n\t}\n\tllmtap {\n\t\ttenant placeholder {http.auth.user.id}\n\t}\n\treverse_proxy " + up.addr},
	)
	c := newClient(t)
	const secret = "sk-live-0123456789abcdef"
	for i, auth := range []string{"Bearer " + secret, "Bearer " + secret, "Bearer other-key"} {
		req, err := testkit.NewPost(t.Context(), p.sites[0]+"/v1/chat/completions", fmt.Sprintf("%s-key-%d", model, i), chatBody(model, 2, true, true))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", auth)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	req, err := testkit.NewPost(t.Context(), p.sites[1]+"/v1/chat/completions", model+"-basic", chatBody(model, 2, true, true))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("alice", "wonderland")
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("basic_auth request: %v %v", resp, err)
	}
	resp.Body.Close()

	key, err := keyparse.Parse(fleet, tenant.MinKeyLen, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := tenant.KeyID(key, secret)
	recs := p.records(t)
	for i, wantTenant := range []string{want, want, tenant.KeyID(key, "other-key")} {
		if r := recs[fmt.Sprintf("%s-key-%d", model, i)]; r.Tenant != wantTenant {
			t.Errorf("request %d: tenant %q, want %q", i, r.Tenant, wantTenant)
		}
	}
	if !strings.HasPrefix(want, tenant.KeyPrefix) || want == tenant.KeyID(key, "other-key") {
		t.Errorf("key tenants %q", want)
	}
	if r := recs[model+"-basic"]; r.Tenant != "alice" {
		t.Errorf("basic_auth request: tenant %q, want alice", r.Tenant)
	}
	counts := p.tenantCounts(t, model)
	if counts[want] != 2 || counts["alice"] != 1 {
		t.Errorf("llmtap_tenant_requests_total by tenant: %v", counts)
	}
	for _, path := range []string{"/metrics", "/llmtap/summary", "/llmtap/requests?limit=1000"} {
		if bytes.Contains(p.adminGet(t, path), []byte(secret)) {
			t.Errorf("GET %s shows the API key", path)
		}
	}
}

// TestTokensByKind sends an OpenAI chat stream (a reasoning model with a prompt cache hit) and
// an Anthropic Messages stream (a cache read and a cache write) from the mock through Caddy and
// checks each kind in the records and in llmtap_tokens_total: cached input, cache-write input
// and reasoning output beside input and output, per tenant.
func TestTokensByKind(t *testing.T) {
	llmtap.ResetTenantLabels()
	t.Cleanup(llmtap.ResetTenantLabels)
	model := ownName("kinds-")
	t.Cleanup(func() { llmtap.DeleteModelSeries(model) })
	up := startUpstream(t, mock.Config{OutputTokens: 6, Reasoning: 2, CachedTokens: 5, CacheWriteTokens: 3, Seed: 3})
	p, _ := loadProxy(t, "", site{body: "\tllmtap {\n\t\ttenant header X-Tenant\n\t}\n\treverse_proxy " + up.addr})
	c := newClient(t)
	send := func(path, id string, body []byte) {
		req, err := testkit.NewPost(t.Context(), p.sites[0]+path, id, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Tenant", "acme")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = bytes.NewBuffer(nil).ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", path, resp.Status)
		}
	}
	send("/v1/chat/completions", model+"-chat", chatBody(model, 6, true, true))
	send("/v1/messages", model+"-msg", []byte(`{"model":"`+model+`","max_tokens":6,"stream":true,"messages":[{"role":"user","content":"Tell me a story about a lighthouse."}]}`))

	recs := p.records(t)
	chat, msg := recs[model+"-chat"], recs[model+"-msg"]
	if chat.CachedTokens != 5 || chat.ReasoningTokens != 2 || chat.CacheWriteTokens != 0 || chat.Tenant != "acme" {
		t.Errorf("chat record: cached %d reasoning %d cache write %d tenant %q; want 5, 2, 0, acme", chat.CachedTokens, chat.ReasoningTokens, chat.CacheWriteTokens, chat.Tenant)
	}
	if msg.CachedTokens != 5 || msg.CacheWriteTokens != 3 || msg.InputTokens < 8 {
		t.Errorf("messages record: cached %d cache write %d input %d; want 5, 3 and the whole prompt", msg.CachedTokens, msg.CacheWriteTokens, msg.InputTokens)
	}
	got := map[string]float64{}
	for _, s := range p.metricSamples(t, "llmtap_tokens_total") {
		if s.labels["model"] == model && s.labels["tenant"] == "acme" {
			got[s.labels["type"]] += s.value
		}
	}
	want := map[string]float64{
		"input":             float64(chat.InputTokens + msg.InputTokens),
		"output":            float64(chat.OutputTokens + msg.OutputTokens),
		"cached_input":      10,
		"cache_write_input": 3,
		"reasoning_output":  float64(chat.ReasoningTokens + msg.ReasoningTokens),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("llmtap_tokens_total{type=%q} = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
