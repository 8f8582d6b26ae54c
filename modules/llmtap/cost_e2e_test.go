package llmtap_test

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	_ "github.com/llmtap/llmtap/modules/commands" // llmtap report, run as the CLI runs it
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/record"
)

// costSums are one tenant's and model's sums over the records.
type costSums struct {
	requests                       int64
	tokens                         int64 // input and output
	gpuSeconds, cost, listCost     float64
	costed, listCosted, gpuCovered int // records with a cost, a list cost, GPU figures
}

// near reports whether a and b agree to a relative rel (absolute rel·1e-12 near 0).
func near(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(math.Max(math.Abs(a), math.Abs(b)), 1e-12)
}

// TestCostThroughCaddy runs two tenants and two models (an OpenAI chat model priced by name,
// with cached input and reasoning tokens; an Anthropic messages model priced by a pattern,
// with cached and cache-write input) through real Caddy with llmtap in front of the mock,
// a price per GPU-hour and list prices configured, and GPU samples injected through the GPU
// feature's opener (there is no GPU here). Each record's GPU-hour cost is its GPU-seconds at
// the price and its list cost its tokens by kind at the configured prices, computed here
// independently; and per tenant and model, the GPU-seconds, both costs and the cost per
// million tokens on /metrics, /llmtap/summary and `llmtap report` (the command, over the
// records file) equal the sums of the records file.
func TestCostThroughCaddy(t *testing.T) {
	llmtap.ResetTenantLabels()
	t.Cleanup(llmtap.ResetTenantLabels)
	var fs fakeGPUs
	defer llmtap.SetGPUOpener(fs.open)()
	chatModel, msgModel := ownName("costa-"), ownName("costb-")
	t.Cleanup(func() { llmtap.DeleteModelSeries(chatModel, msgModel) })
	const perGPUHour = 3.6
	type prices struct{ in, out, cached, write float64 }
	want := map[string]prices{chatModel: {2, 8, 0.5, 2}, msgModel: {3, 15, 0.3, 3.75}}
	globals := fmt.Sprintf("\tllmtap {\n\t\tgpu {\n\t\t\tinterval 20ms\n\t\t\tprice_per_gpu_hour %v\n\t\t}\n"+
		"\t\tlist_price %s {\n\t\t\tinput 2\n\t\t\toutput 8\n\t\t\tcached_input 0.5\n\t\t}\n"+
		"\t\tlist_price costb-* {\n\t\t\tinput 3\n\t\t\toutput 15\n\t\t\tcached_input 0.3\n\t\t\tcache_write 3.75\n\t\t}\n\t}",
		perGPUHour, chatModel)
	up := startUpstream(t, mock.Config{TTFT: 30 * time.Millisecond, ITL: 5 * time.Millisecond, OutputTokens: 6,
		Reasoning: 2, CachedTokens: 5, CacheWriteTokens: 3, Seed: 5})
	dir := filepath.Join(t.TempDir(), "rec")
	p, _ := loadProxy(t, globals, site{body: fmt.Sprintf("\tllmtap {\n\t\ttenant header X-Tenant\n\t\trecord %s {\n\t\t\tflush_interval 100ms\n\t\t}\n\t}\n"+
		"\treverse_proxy %s {\n\t\tflush_interval -1\n\t}", dir, up.addr)})
	// The sampler must be polling before the first request, or early records have no GPU.
	for deadline := time.Now().Add(5 * time.Second); len(llmtap.LatestGPUSamples(nil)) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the injected GPU was not sampled within 5 s")
		}
	}

	c := newClient(t)
	const perPair = 5
	tenants := []string{"acme", "globex"}
	var wg sync.WaitGroup
	work := make(chan [2]string)
	for range 4 {
		wg.Go(func() {
			for w := range work {
				tenant, model := w[0], w[1]
				path, body := "/v1/chat/completions", chatBody(model, 6, true, true)
				if model == msgModel {
					path, body = "/v1/messages", []byte(`{"model":"`+model+`","max_tokens":6,"stream":true,"messages":[{"role":"user","content":"Tell me a long story about the lighthouse keeper, the storm that came at night and the ship he saved."}]}`)
				}
				req, err := testkit.NewPost(t.Context(), p.sites[0]+path, "", body)
				if err != nil {
					t.Error(err)
					continue
				}
				req.Header.Set("X-Tenant", tenant)
				resp, err := c.Do(req)
				if err != nil {
					t.Error(err)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s %s: %s", tenant, path, resp.Status)
				}
			}
		})
	}
	for range perPair {
		for _, tn := range tenants {
			for _, m := range []string{chatModel, msgModel} {
				work <- [2]string{tn, m}
			}
		}
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Read the live surfaces, then stop Caddy so the records file is complete.
	waitIdle(t)
	var summary struct {
		RecordsDropped uint64 `json:"records_dropped"`
		Summary        struct {
			Usage []struct {
				Tenant, Model, Class     string
				InputTokens              int64   `json:"input_tokens"`
				OutputTokens             int64   `json:"output_tokens"`
				GPUSeconds               float64 `json:"gpu_seconds"`
				Cost                     float64 `json:"cost"`
				ListCost                 float64 `json:"list_cost"`
				CostPerMillionTokens     float64 `json:"cost_per_million_tokens"`
				ListCostPerMillionTokens float64 `json:"list_cost_per_million_tokens"`
			} `json:"usage"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(p.adminGet(t, "/llmtap/summary"), &summary); err != nil || summary.RecordsDropped != 0 {
		t.Fatalf("summary: %v, %d records dropped", err, summary.RecordsDropped)
	}
	metric := map[string]float64{} // name/tenant/model[/basis]
	for _, name := range []string{"llmtap_gpu_seconds_total", "llmtap_cost_total"} {
		for _, s := range p.metricSamples(t, name) {
			if s.labels["class"] == record.ClassLive && (s.labels["model"] == chatModel || s.labels["model"] == msgModel) {
				metric[name+"/"+s.labels["tenant"]+"/"+s.labels["model"]+"/"+s.labels["basis"]] += s.value
			}
		}
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}

	// The records file: each record's costs, checked one by one, then summed.
	recs := recordLines(t, dir)
	if len(recs) != perPair*len(tenants)*2 {
		t.Fatalf("the records file holds %d records, want %d", len(recs), perPair*len(tenants)*2)
	}
	sums := map[string]*costSums{}
	for _, r := range recs {
		key := r.Tenant + "/" + r.Model
		pr, ok := want[r.Model]
		if !ok || r.Class != record.ClassLive {
			t.Fatalf("a record of model %q, class %q", r.Model, r.Class)
		}
		s := sums[key]
		if s == nil {
			s = &costSums{}
			sums[key] = s
		}
		tokens := r.InputTokens + r.OutputTokens
		s.requests++
		s.tokens += tokens
		// Tokens by kind: uncached input, cached, cache write, output (reasoning included).
		uncached := r.InputTokens - r.CachedTokens - r.CacheWriteTokens
		listWant := (float64(uncached)*pr.in + float64(r.CachedTokens)*pr.cached + float64(r.CacheWriteTokens)*pr.write + float64(r.OutputTokens)*pr.out) / 1e6
		if r.CachedTokens != 5 || r.OutputTokens != 6 || uncached <= 0 || (r.Model == msgModel) != (r.CacheWriteTokens == 3) {
			t.Errorf("%s: tokens in %d cached %d write %d out %d reasoning %d: not what the mock reports", r.RequestID, r.InputTokens, r.CachedTokens, r.CacheWriteTokens, r.OutputTokens, r.ReasoningTokens)
		}
		switch lc := r.ListCost; {
		case lc == nil:
			t.Errorf("%s (%s): no list cost", r.RequestID, r.Model)
		case !near(lc.Total, listWant, 1e-12) || lc.Basis != record.BasisListPrice || !near(lc.PerMillionTokens, listWant/float64(tokens)*1e6, 1e-12):
			t.Errorf("%s: list cost %+v, want %g (%g per million tokens)", r.RequestID, *lc, listWant, listWant/float64(tokens)*1e6)
		default:
			s.listCost += lc.Total
			s.listCosted++
		}
		if r.GPU == nil {
			if r.Cost != nil {
				t.Errorf("%s: a GPU-hour cost without GPU figures: %+v", r.RequestID, *r.Cost)
			}
			continue
		}
		s.gpuCovered++
		s.gpuSeconds += r.GPU.GPUSeconds
		gpuWant := r.GPU.GPUSeconds / 3600 * perGPUHour
		switch gc := r.Cost; {
		case gc == nil:
			t.Errorf("%s: GPU figures but no cost", r.RequestID)
		case !near(gc.Total, gpuWant, 1e-12) || gc.Basis != record.BasisGPUHour || !near(gc.PerMillionTokens, gpuWant/float64(tokens)*1e6, 1e-12):
			t.Errorf("%s: cost %+v, want %g (%g per million tokens)", r.RequestID, *gc, gpuWant, gpuWant/float64(tokens)*1e6)
		default:
			s.cost += gc.Total
			s.costed++
		}
	}
	if len(sums) != 4 {
		t.Fatalf("%d tenant/model pairs in the records, want 4", len(sums))
	}
	for key, s := range sums {
		if s.requests != perPair || s.gpuCovered == 0 || s.costed == 0 || s.gpuSeconds <= 0 || s.listCosted != perPair {
			t.Errorf("%s: %d requests, %d with GPU figures, %d with a cost, %d with a list cost: the injected GPU or the prices did not reach them",
				key, s.requests, s.gpuCovered, s.costed, s.listCosted)
		}
	}

	// /metrics: GPU-seconds and both costs by basis.
	for key, s := range sums {
		for _, m := range []struct {
			name string
			want float64
		}{
			{"llmtap_gpu_seconds_total/" + key + "/", s.gpuSeconds},
			{"llmtap_cost_total/" + key + "/" + record.BasisGPUHour, s.cost},
			{"llmtap_cost_total/" + key + "/" + record.BasisListPrice, s.listCost},
		} {
			if got := metric[m.name]; !near(got, m.want, 1e-9) {
				t.Errorf("/metrics %s = %g, the records sum to %g", m.name, got, m.want)
			}
		}
	}
	// /llmtap/summary: the usage rows.
	seen := 0
	for _, u := range summary.Summary.Usage {
		s := sums[u.Tenant+"/"+u.Model]
		if s == nil || u.Class != record.ClassLive {
			continue
		}
		seen++
		tokens := float64(u.InputTokens + u.OutputTokens)
		if int64(tokens) != s.tokens || !near(u.GPUSeconds, s.gpuSeconds, 1e-9) || !near(u.Cost, s.cost, 1e-9) || !near(u.ListCost, s.listCost, 1e-9) ||
			!near(u.CostPerMillionTokens, s.cost/tokens*1e6, 1e-9) || !near(u.ListCostPerMillionTokens, s.listCost/tokens*1e6, 1e-9) {
			t.Errorf("summary %s/%s: %+v; the records: %d tokens, %g GPU-s, cost %g, list cost %g", u.Tenant, u.Model, u, s.tokens, s.gpuSeconds, s.cost, s.listCost)
		}
	}
	if seen != 4 {
		t.Errorf("the summary has %d usage rows of the test's tenants and models, want 4", seen)
	}

	// llmtap report over the records folder, as the command line runs it.
	out := filepath.Join(t.TempDir(), "report.html")
	cmd := &cobra.Command{}
	caddycmd.Commands()["report"].CobraFunc(cmd)
	if err := cmd.RunE(cmd, []string{dir, "-o", out}); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	table, _, _ := strings.Cut(string(page[strings.Index(string(page), `<table id="usage">`)+1:]), "</table>")
	cell := regexp.MustCompile(`<td>([^<]*)</td>`)
	seen = 0
	for row := range strings.SplitSeq(table, "<tr>") {
		var cells []string
		for _, m := range cell.FindAllStringSubmatch(row, -1) {
			cells = append(cells, html.UnescapeString(m[1]))
		}
		// run, tenant, model, class, requests, errors, in, out, cached, write, reasoning,
		// GPU-seconds, energy, cost, cost per Mtok, list cost, list cost per Mtok
		if len(cells) != 17 {
			continue
		}
		s := sums[cells[1]+"/"+cells[2]]
		if s == nil {
			t.Errorf("report row of tenant %q model %q: not in the records", cells[1], cells[2])
			continue
		}
		seen++
		num := func(i int) float64 {
			v, err := strconv.ParseFloat(cells[i], 64)
			if err != nil {
				t.Errorf("report cell %d %q: %v", i, cells[i], err)
			}
			return v
		}
		tokens := float64(s.tokens)
		// The report writes 6 significant digits: a relative error of at most 5e-6.
		for _, c := range []struct {
			what string
			i    int
			want float64
		}{
			{"GPU-seconds", 11, s.gpuSeconds}, {"cost", 13, s.cost}, {"cost per Mtok", 14, s.cost / tokens * 1e6},
			{"list cost", 15, s.listCost}, {"list cost per Mtok", 16, s.listCost / tokens * 1e6},
		} {
			if got := num(c.i); !near(got, c.want, 1e-5) {
				t.Errorf("report %s/%s %s = %s, the records give %g", cells[1], cells[2], c.what, cells[c.i], c.want)
			}
		}
	}
	if seen != 4 {
		t.Errorf("the report has %d usage rows, want 4", seen)
	}
}
