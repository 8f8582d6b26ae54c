package llmtap_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
)

// TestConnectShadow drives a shadow load of the config through the API on the admin listener:
// status, rate, stop and start, errors for unknown loads and rates over the ceiling, and the
// shadow state in the timeline stream; the load's requests reach the mock through Caddy.
func TestConnectShadow(t *testing.T) {
	mock, err := mock.New(mock.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := loadShadowProxy(t, testkit.Serve(t, mock), func(site string) string {
		return fmt.Sprintf("\tllmtap {\n\t\tgpu off\n\t\tshadow s {\n\t\t\turl http://%s/v1/chat/completions\n\t\t\tmodel shadow-m\n\t\t\trate 20\n\t\t\tmax_rate 50\n\t\t\tisl 16\n\t\t\tosl 8\n\t\t}\n\t}", site)
	})
	h1, _ := h1Client(t)
	c := llmtapv1connect.NewTapServiceClient(h1, p.admin, connect.WithProtoJSON())
	ctx := t.Context()
	status := func() *llmtapv1.ShadowLoad {
		t.Helper()
		res, err := c.ShadowStatus(ctx, connect.NewRequest(&llmtapv1.ShadowStatusRequest{}))
		if err != nil {
			t.Fatalf("ShadowStatus: %v", err)
		}
		if l := res.Msg.State.GetLoads(); len(l) == 1 && l[0].Name == "s" {
			return l[0]
		}
		t.Fatalf("ShadowStatus %v: want the one load s", res.Msg.State)
		return nil
	}
	if l := status(); l.ConfigRate != 20 || l.MaxRate != 50 {
		t.Errorf("load %v: want config rate 20, max rate 50", l)
	}
	waitUntil(t, 10*time.Second, "shadow requests answered", func() bool { return status().Ok >= 5 })

	set, err := c.ShadowSetRate(ctx, connect.NewRequest(&llmtapv1.ShadowSetRateRequest{Name: "s", Rate: 10}))
	if err != nil || set.Msg.Load.GetRate() != 10 {
		t.Errorf("ShadowSetRate 10: %v %v, want the load at rate 10", set, err)
	}
	if _, err := c.ShadowSetRate(ctx, connect.NewRequest(&llmtapv1.ShadowSetRateRequest{Name: "s", Rate: 500})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("ShadowSetRate 500 over max_rate 50: %v, want InvalidArgument", err)
	}
	if _, err := c.ShadowStop(ctx, connect.NewRequest(&llmtapv1.ShadowStopRequest{Name: "t"})); connect.CodeOf(err) != connect.CodeNotFound || !strings.Contains(err.Error(), `"t"`) {
		t.Errorf("ShadowStop t: %v, want NotFound naming it", err)
	}

	st, err := c.StreamTimeline(ctx, connect.NewRequest(&llmtapv1.StreamTimelineRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if !st.Receive() {
		t.Fatalf("no timeline window: %v", st.Err())
	}
	if l := st.Msg().Window.GetShadow().GetLoads(); len(l) != 1 || l[0].Name != "s" || l[0].Rate != 10 {
		t.Errorf("the window's shadow state %v: want load s at rate 10", st.Msg().Window.GetShadow())
	}
	st.Close()

	if _, err := c.ShadowStop(ctx, connect.NewRequest(&llmtapv1.ShadowStopRequest{})); err != nil {
		t.Fatalf("ShadowStop (the only load): %v", err)
	}
	waitUntil(t, 10*time.Second, "the load to stop", func() bool { return status().State == "stopped" })
	sent := status().Sent
	time.Sleep(200 * time.Millisecond) // 4 arrivals at rate 20, if it still ran
	if l := status(); l.Sent != sent {
		t.Errorf("the stopped load sent %d more requests", l.Sent-sent)
	}
	if res, err := c.ShadowStart(ctx, connect.NewRequest(&llmtapv1.ShadowStartRequest{Name: "s"})); err != nil || res.Msg.Load.GetState() == "stopped" {
		t.Errorf("ShadowStart s: %v %v, want it started", res, err)
	}
	waitUntil(t, 10*time.Second, "the restarted load to send", func() bool { return status().Sent > sent })
	if _, err := c.ShadowStop(ctx, connect.NewRequest(&llmtapv1.ShadowStopRequest{Name: "s"})); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the load to stop", func() bool { return status().State == "stopped" })
	if l := status(); l.Errors != 0 || l.Ok == 0 {
		t.Errorf("load %v: want answered requests and no errors", l)
	}
}

// TestConnectShadowNone checks the shadow RPCs of a config without shadow loads.
func TestConnectShadowNone(t *testing.T) {
	up := startUpstream(t, mock.Config{})
	p, _ := loadProxy(t, "", site{body: "\tllmtap\n\treverse_proxy " + up.addr})
	h1, _ := h1Client(t)
	c := llmtapv1connect.NewTapServiceClient(h1, p.admin)
	if _, err := c.ShadowStart(t.Context(), connect.NewRequest(&llmtapv1.ShadowStartRequest{})); connect.CodeOf(err) != connect.CodeNotFound || !strings.Contains(err.Error(), "no shadow load") {
		t.Errorf("ShadowStart without shadow loads: %v, want NotFound saying there is none", err)
	}
	res, err := c.ShadowStatus(t.Context(), connect.NewRequest(&llmtapv1.ShadowStatusRequest{}))
	if err != nil || len(res.Msg.State.GetLoads()) != 0 {
		t.Errorf("ShadowStatus: %v %v, want no loads", res, err)
	}
}
