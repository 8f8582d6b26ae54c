package llmtap_test

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/internal/limits"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
)

// TestFaultsHostileNumbers (fault matrix): numbers no machine can serve are refused where
// they are read, with the file and line and the limit, before anything is built from them;
// prices at their limit leave every surface encoding. Before: a list_price of 1e308 was taken
// and after three requests llmtap_cost_total was +Inf and GET /llmtap/summary answered 500
// from then on; shadow isl 1e12 and entries 1e8 adapted and then never finished loading while
// memory grew; a shadow trace of two rows of 1e8 input tokens held the proxy at 2.7 GB with
// its site silent for 15–20 s.
func TestFaultsHostileNumbers(t *testing.T) {
	up := startUpstream(t, mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond, OutputTokens: 4, Seed: 1})
	hostile := filepath.Join(t.TempDir(), "hostile.jsonl")
	if err := os.WriteFile(hostile, []byte(`{"timestamp": 0, "input_length": 100000000, "output_length": 10, "model": "m"}`+"\n"+
		`{"timestamp": 5, "input_length": 100000000, "output_length": 10, "model": "m"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inGlobal := func(block string) string {
		return "{\n\tllmtap {\n" + block + "\n\t}\n}\n:0 {\n\tllmtap\n\trespond 200\n}\n"
	}
	shadow := "\t\tshadow s {\n\t\t\turl http://" + up.addr + "/v1/chat/completions\n\t\t\tmodel m\n\t\t\trate 1\n\t\t\t%s\n\t\t}"
	for _, c := range []struct{ block, want string }{
		{"\t\tlist_price m {\n\t\t\tinput 1e308\n\t\t\toutput 1\n\t\t}", "limits.MaxPrice"},
		{"\t\tgpu {\n\t\t\tprice_per_gpu_hour 1e308\n\t\t}", "limits.MaxPrice"},
		{fmt.Sprintf(shadow, "isl 1e12"), "limits.MaxTokens"},
		{fmt.Sprintf(shadow, "osl 1e12"), "limits.MaxTokens"},
		{fmt.Sprintf(shadow, "entries 100000000"), fmt.Sprint("from 0 to ", limits.MaxEntries)},
	} {
		if _, err := testkit.AdaptCaddyfile("Caddyfile", inGlobal(c.block)); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "Caddyfile:") {
			t.Errorf("%q: %v; want an error at its line naming %s", c.block, err, c.want)
		}
	}
	// The hostile trace adapts (the file is read when the load is built) and is refused when
	// the config loads, naming the file and line; the running config stays.
	cfg := testkit.Adapt(t, "Caddyfile", inGlobal(strings.Replace(fmt.Sprintf(shadow, "trace "+hostile), "\t\t\trate 1\n", "", 1)))
	if err := caddy.Load(cfg, true); err == nil || !strings.Contains(err.Error(), hostile+":1") || !strings.Contains(err.Error(), "limits.MaxTokens") {
		t.Errorf("a shadow trace of 1e8-token rows: %v; want it refused at %s:1 naming limits.MaxTokens", err, hostile)
	}

	// Prices at their limit: three requests, and every surface still encodes its figures.
	top := fmt.Sprint(float64(limits.MaxPrice))
	model := ownName("dear-")
	t.Cleanup(func() { llmtap.DeleteModelSeries(model) })
	p, _ := loadProxy(t, "\tllmtap {\n\t\tgpu {\n\t\t\tprice_per_gpu_hour "+top+"\n\t\t}\n\t\tlist_price * {\n\t\t\tinput "+top+"\n\t\t\toutput "+top+"\n\t\t}\n\t}",
		site{body: "\tllmtap\n\treverse_proxy " + up.addr})
	c := newClient(t)
	for i := range 3 {
		resp, err := c.Post(p.sites[0]+"/v1/chat/completions", "application/json", bytes.NewReader(chatBody(model, 4, true, true)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %s", i, resp.Status)
		}
	}
	waitIdle(t)
	resp, err := c.Get(p.admin + "/llmtap/summary")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /llmtap/summary at the price limit: %s", resp.Status)
	}
	var costs int
	for _, s := range p.metricSamples(t, "llmtap_cost_total") {
		if s.labels["model"] == model {
			costs++
			if math.IsInf(s.value, 0) || math.IsNaN(s.value) || s.value <= 0 {
				t.Errorf("llmtap_cost_total %v = %v", s.labels, s.value)
			}
		}
	}
	if costs == 0 {
		t.Error("no llmtap_cost_total sample for the priced model")
	}
}
