//go:build cgo && linux

package llmtap_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// powerStep is a GPU whose power steps from low to high watts at a moment the test picks,
// with an energy counter that integrates that power over wall-clock time, as the driver's
// does.
type powerStep struct {
	t0        time.Time
	low, high float64      // W
	stepAt    atomic.Int64 // Unix ns of the step, 0 before it
}

func (p *powerStep) powerMW(now time.Time) uint32 {
	if at := p.stepAt.Load(); at != 0 && now.UnixNano() >= at {
		return uint32(p.high * 1e3)
	}
	return uint32(p.low * 1e3)
}

func (p *powerStep) energyMJ(now time.Time) uint64 {
	j := p.low * now.Sub(p.t0).Seconds()
	if at := p.stepAt.Load(); at != 0 && now.UnixNano() >= at {
		j += (p.high - p.low) * now.Sub(time.Unix(0, at)).Seconds()
	}
	return uint64(j * 1e3)
}

// newSteppingH100 returns go-nvml's DGX H100 mock with every method the sampler calls given
// a value, power and energy following p.
func newSteppingH100(p *powerStep) *server.Server {
	srv := dgxh100.New()
	for _, d := range srv.Devices {
		d := d.(*server.Device)
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return p.powerMW(time.Now()), nvml.SUCCESS }
		d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return p.energyMJ(time.Now()), nvml.SUCCESS }
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: 90, Memory: 40}, nvml.SUCCESS
		}
		d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: d.MemoryInfo.Total, Used: 40 << 30}, nvml.SUCCESS
		}
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 60, nvml.SUCCESS }
		d.GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
		d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.SUCCESS }
	}
	return srv
}

// switchable serves whichever mock is current: switching is restarting the upstream with a
// new config, on the same address.
type switchable struct {
	cur atomic.Pointer[mock.Server]
}

func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.cur.Load().ServeHTTP(w, r) }

// TestTimelineStepsLandTogether is the scripted scenario of the timeline: streams run through
// Caddy to the mock server while the go-nvml mock's GPUs draw 100 W; just after a window
// boundary B the mock is restarted with a TTFT of 400 ms instead of 10 ms and, at the same
// moment, the GPUs' power steps to 400 W. The timeline must show both steps in the window
// starting at B and neither in the window before. The records of the run carry their GPU
// figures and the summary its tokens per joule.
func TestTimelineStepsLandTogether(t *testing.T) {
	ps := &powerStep{t0: time.Now(), low: 100, high: 400}
	srv := newSteppingH100(ps)
	defer llmtap.SetGPUOpener(func() (gpu.Source, error) {
		src, err := gpu.NewNVML(srv)
		if err != nil {
			return nil, err
		}
		return src, nil
	})()

	fastCfg := mock.DefaultConfig()
	fastCfg.TTFT, fastCfg.ITL, fastCfg.OutputTokens = 10*time.Millisecond, 2*time.Millisecond, 8
	slowCfg := fastCfg
	slowCfg.TTFT = 400 * time.Millisecond
	fast, err := mock.New(fastCfg)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := mock.New(slowCfg)
	if err != nil {
		t.Fatal(err)
	}
	var up switchable
	up.cur.Store(fast)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: &up, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()

	p, _ := loadProxy(t, "llmtap {\n\t\tgpu {\n\t\t\tinterval 50ms\n\t\t}\n\t}",
		site{body: "llmtap\nreverse_proxy " + ln.Addr().String()})

	// Four clients stream back to back until stop.
	ctx, stop := context.WithCancel(context.Background())
	client := newClient(t)
	var wg sync.WaitGroup
	var sent atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				id := "step-" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
				if resp, _, err := testkit.PostJSON(context.Background(), client, p.sites[0]+"/v1/chat/completions", id, chatBody("m", 8, true, true)); err == nil && resp.StatusCode == http.StatusOK {
					sent.Add(1)
				}
			}
		}()
	}

	// B is a window boundary at least 1.5 s away, so the window before it is full of fast
	// traffic and 100 W samples; the step comes 50 ms after B.
	b := time.Now().Add(1500 * time.Millisecond).Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(b.Add(50 * time.Millisecond)))
	up.cur.Store(slow)
	ps.stepAt.Store(time.Now().UnixNano())
	time.Sleep(time.Until(b.Add(1200 * time.Millisecond)))
	stop()
	wg.Wait()
	waitIdle(t)
	time.Sleep(time.Until(b.Add(2100 * time.Millisecond))) // window B+1 has closed

	var doc struct {
		Windows []timeline.Window `json:"windows"`
	}
	if err := json.Unmarshal(p.adminGet(t, "/llmtap/timeline?class=live&since="+strconv.FormatInt(b.Add(-time.Second).UnixMilli(), 10)), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Windows) < 2 || doc.Windows[0].StartMs != b.Add(-time.Second).UnixMilli() {
		t.Fatalf("got %d windows from %v; want the ones starting at B-1s and B", len(doc.Windows), doc.Windows)
	}
	before, at := doc.Windows[0], doc.Windows[1]
	ttftP99 := func(w timeline.Window) float64 {
		for _, s := range w.Series {
			if s.TTFTMs != nil {
				return s.TTFTMs.P99
			}
		}
		return -1
	}
	meanPower := func(w timeline.Window) (lo, hi float64) {
		lo = 1e9
		for _, g := range w.GPUs {
			if g.PowerW == nil {
				t.Fatalf("window %d GPU %d has no power", w.Seq, g.Index)
			}
			lo, hi = min(lo, *g.PowerW), max(hi, *g.PowerW)
		}
		return lo, hi
	}
	t.Logf("%d requests; window B-1: TTFT p99 %.1f ms, window B: TTFT p99 %.1f ms", sent.Load(), ttftP99(before), ttftP99(at))
	// The slow mock waits 400 ms before its first token, so no request it served has a TTFT
	// under 400 ms and no request the fast one served (10 ms) comes near it.
	if p := ttftP99(before); p < 0 || p >= 400 {
		t.Errorf("the window before the step has TTFT p99 %.1f ms; want only the fast mock's (< 400 ms)", p)
	}
	if p := ttftP99(at); p < 400 {
		t.Errorf("the window of the step has TTFT p99 %.1f ms; want the slow mock's (≥ 400 ms)", p)
	}
	if len(before.GPUs) != 8 || len(at.GPUs) != 8 {
		t.Fatalf("windows have %d and %d GPUs; want the mock's 8", len(before.GPUs), len(at.GPUs))
	}
	if _, hi := meanPower(before); hi >= 150 {
		t.Errorf("the window before the step has a GPU at %.1f W; want all at 100 W", hi)
	}
	if lo, _ := meanPower(at); lo <= 250 {
		t.Errorf("the window of the step has a GPU at %.1f W on average; want the step to 400 W in it", lo)
	}
	if e0, e1 := *before.GPUs[0].EnergyJ, *at.GPUs[0].EnergyJ; e0 < 80 || e0 > 120 || e1 < 300 {
		t.Errorf("GPU 0 energy %.1f J then %.1f J; want about 100 J, then over 300 J", e0, e1)
	}

	// Item 4 through the real pipeline: records have GPU figures, the summary tokens per joule.
	var withGPU int
	for _, r := range p.records(t) {
		if r.GPU != nil && r.GPU.EnergyJ > 0 && r.GPU.GPUs == 8 && r.GPU.PowerW >= 800 && r.GPU.UtilPercent == 90 {
			withGPU++
		}
	}
	if withGPU == 0 {
		t.Error("no record carries GPU figures (8 GPUs, ≥ 800 W in all, 90% util, an energy share)")
	}
	var raw struct {
		Summary struct {
			Groups []map[string]json.RawMessage `json:"groups"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(p.adminGet(t, "/llmtap/summary"), &raw); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range raw.Summary.Groups {
		if v, ok := g[stats.TagTokensPerJoule]; ok {
			var sc stats.Scalar
			if err := json.Unmarshal(v, &sc); err != nil || sc.Value <= 0 || sc.Unit != "tokens/J" {
				t.Errorf("%s = %s", stats.TagTokensPerJoule, v)
			}
			found = true
		}
	}
	if !found {
		t.Error("the summary has no output_tokens_per_joule although GPU data exists")
	}
}
