package top

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/llmtap/llmtap/api"
	"github.com/llmtap/llmtap/api/client"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// tenantRows is how many tenants the tenant part of a frame lists, most requests first.
const tenantRows = 10

// Tenants returns the frame's tenant part: the usage rows of GET /llmtap/summary (Caddy's
// admin listener serves it; a bench's API and an llmtap_api site do not), summed per tenant
// over the models and classes the view shows, since the server started. It is "" when the
// address has no summary or no request had a tenant.
func (v *View) Tenants(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var doc api.SummaryDoc
	b, err := client.Get(ctx, &http.Client{Transport: &http.Transport{Proxy: nil}}, v.o.Base+"/llmtap/summary")
	if err != nil || json.Unmarshal(b, &doc) != nil {
		return ""
	}
	return v.TenantTable(doc.Summary.Usage)
}

// TenantTable sums usage rows per tenant (within the view's class and model filters) and
// renders the busiest.
func (v *View) TenantTable(rows []stats.Usage) string {
	by := map[string]*stats.Usage{}
	for _, u := range rows {
		if u.Tenant == "" || v.o.Class != "" && u.Class != v.o.Class || v.o.Model != "" && u.Model != v.o.Model {
			continue
		}
		t := by[u.Tenant]
		if t == nil {
			t = &stats.Usage{UsageKey: stats.UsageKey{Tenant: u.Tenant}}
			by[u.Tenant] = t
		}
		t.Merge(u)
	}
	if len(by) == 0 {
		return ""
	}
	list := make([]*stats.Usage, 0, len(by))
	for _, u := range by {
		list = append(list, u)
	}
	slices.SortFunc(list, func(a, b *stats.Usage) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Tenant, b.Tenant))
	})
	var b strings.Builder
	noGPU := false
	fmt.Fprintf(&b, "\ntenants (since start, %d of %d)\n", min(len(list), tenantRows), len(list))
	fmt.Fprintf(&b, "%-24s %9s %7s %11s %11s %9s %9s %9s %9s %9s\n", "tenant", "requests", "errors", "in tokens", "out tokens", "cached", "reasoning", "GPU-s", "cost", "list cost")
	for _, u := range list[:min(len(list), tenantRows)] {
		name := u.Tenant
		if len(name) > 24 {
			name = name[:23] + "…"
		}
		// Without a GPU sample over its requests a row's GPU time and cost are unknown, not 0.
		gpu, cost := fmt.Sprintf("%9.2f", u.GPUSeconds), fmt.Sprintf("%9.4f", u.Cost)
		if u.GPUSeconds <= 0 {
			gpu, cost, noGPU = fmt.Sprintf("%9s", "-"), fmt.Sprintf("%9s", "no GPU*"), true
		}
		fmt.Fprintf(&b, "%-24s %9d %7d %11d %11d %9d %9d %s %s %9.4f\n", name, u.Requests, u.Errors, u.InputTokens, u.OutputTokens,
			u.CachedInputTokens, u.ReasoningOutputTokens, gpu, cost, u.ListCost)
	}
	if noGPU {
		b.WriteString("* no GPU samples: no GPU sample covered these requests (no NVML, no DCGM scrape), so their GPU time and cost are unknown\n")
	}
	return b.String()
}
