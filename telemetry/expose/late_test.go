package expose

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/llmtap/llmtap/telemetry/record"
)

// TestLateSlots: a slot prints as Caddy prints a variable of its value (its placeholders and
// matchers), encodes as that value in JSON and through zap.Any (a number stays a number in a
// JSON access log), is "" until set, and may be read while the response's end sets it (-race).
func TestLateSlots(t *testing.T) {
	l := NewLate()
	for i := range LateSlots {
		if got := caddy.ToString(l.Slot(i)); got != "" {
			t.Errorf("slot %d before the response ended: %q, want empty", i, got)
		}
	}
	ttft := 12.5
	rec := &record.Record{TTFTMs: &ttft, InputTokens: 40, InputTokensSource: record.SourceUsage,
		OutputTokens: 3, OutputTokensSource: record.SourceTokenizer}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 100 {
			_ = caddy.ToString(l.Slot(SlotTTFT))
		}
	})
	l.SetRecord(rec)
	l.Set(SlotTenant, "acme")
	wg.Wait()

	for _, c := range []struct {
		slot     int
		str, js  string
		caddyRaw any // what Caddy prints for the plain value
	}{
		{SlotTTFT, "12.5", "12.5", 12.5},
		{SlotInputTokens, "40", "40", int64(40)},
		{SlotOutputTokens, "", `""`, ""}, // counted later by the tokenizer: not known yet
		{SlotTenant, "acme", `"acme"`, "acme"},
		{SlotQueue, "", `""`, ""},
	} {
		s := l.Slot(c.slot)
		if got, want := caddy.ToString(s), caddy.ToString(c.caddyRaw); got != want || got != c.str {
			t.Errorf("slot %d prints %q, Caddy prints the value %q, want %q", c.slot, got, want, c.str)
		}
		if got := fmt.Sprintf("%v", s); got != c.str {
			t.Errorf("slot %d with %%v: %q, want %q", c.slot, got, c.str)
		}
		js, err := json.Marshal(s)
		if err != nil || string(js) != c.js {
			t.Errorf("slot %d in JSON: %s (%v), want %s", c.slot, js, err, c.js)
		}
		var buf bytes.Buffer
		core := zapcore.NewCore(zapcore.NewJSONEncoder(zapcore.EncoderConfig{}), zapcore.AddSync(&buf), zap.InfoLevel)
		zap.New(core).Info("", zap.Any("v", s))
		if want := `{"v":` + c.js + "}\n"; buf.String() != want {
			t.Errorf("slot %d through zap.Any: %s, want %s", c.slot, buf.String(), want)
		}
	}
}
