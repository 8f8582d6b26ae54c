package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/llmtap/llmtap/api"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/telemetry/headroom"
)

// TestShadowStatusPassiveHeadroom: the Connect API's ShadowStatus carries the passive headroom
// estimates of GET /llmtap/shadow value for value (read over real HTTP from both, one state
// behind them), an unbounded interval end and a missing scrape absent in both.
func TestShadowStatusPassiveHeadroom(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	doc := api.ShadowDoc{PassiveHeadroom: []headroom.Estimate{{
		Upstream: "http://127.0.0.1:9", TTFTObjectiveMs: 450, State: "ok", Requests: 144, Windows: 30, WindowSeconds: 1,
		Confidence: 0.9, KneeConcurrency: 4.1, BaseTTFTMs: 201.5, SlopeMsPerRequest: 95.25,
		SLOConcurrency:     headroom.Interval{Estimate: f(6.6), Low: f(6.1), High: f(7.2)},
		SLORequestsPerSec:  headroom.Interval{Estimate: f(10.5), Low: f(9.7), High: nil},
		CurrentConcurrency: 1.25, CurrentRequestsPerSec: 2.5,
		RemainingConcurrency:    headroom.Interval{Estimate: f(5.35), Low: f(4.85), High: f(5.95)},
		RemainingRequestsPerSec: headroom.Interval{Estimate: f(8), Low: f(7.2)},
		Extrapolated:            true, QueueOnsetConcurrency: f(4.5), KVCacheUsage: f(0.125), Waiting: f(0),
		Levels: []headroom.Level{
			{Concurrency: 1, Requests: 8, TTFTMs: 200.5, LatencyMs: 380.25},
			{Concurrency: 5.5, Requests: 40, TTFTMs: 290, LatencyMs: 470, Waiting: f(1.5), KVCacheUsage: f(0.25)},
		},
	}}}
	shadow := api.RunnerShadow{State: func() api.ShadowDoc { return doc }}

	rec := httptest.NewRecorder()
	if err := api.ShadowLoads(fakeHost{loads: &shadow}, rec, httptest.NewRequest(http.MethodGet, api.ShadowRoute, nil)); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %v", api.ShadowRoute, rec.Code, err)
	}
	var route map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &route); err != nil {
		t.Fatal(err)
	}

	c := serve(t, api.Options{ReadOnly: true, Host: fakeHost{shadow: shadow}.serve()})
	res, err := c.ShadowStatus(context.Background(), connect.NewRequest(&llmtapv1.ShadowStatusRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(res.Msg.GetState())
	if err != nil {
		t.Fatal(err)
	}
	var rpc map[string]any
	if err := json.Unmarshal(b, &rpc); err != nil {
		t.Fatal(err)
	}
	// The route's null members are absent fields of the message; protojson writes int64
	// members ("requests") as strings.
	want, got := route["passive_headroom"], rpc["passive_headroom"]
	walk(want, func(obj map[string]any, k string, x any) {
		if x == nil {
			delete(obj, k)
		}
	})
	walk(got, func(obj map[string]any, k string, x any) {
		if s, ok := x.(string); ok && k == "requests" {
			obj[k], _ = strconv.ParseFloat(s, 64)
		}
	})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ShadowStatus passive_headroom\n%v\nGET /llmtap/shadow's\n%v", got, want)
	}
	if len(res.Msg.GetState().GetPassiveHeadroom()) != 1 || res.Msg.GetState().GetPassiveHeadroom()[0].GetSloRequestsPerSec().High != nil {
		t.Errorf("an unbounded interval end is not absent: %v", res.Msg.GetState().GetPassiveHeadroom())
	}
}

// walk calls fix on every member of every JSON object within v (fix may replace or delete it).
func walk(v any, fix func(obj map[string]any, k string, x any)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			fix(v, k, x)
			walk(v[k], fix)
		}
	case []any:
		for _, x := range v {
			walk(x, fix)
		}
	}
}
