package decode

import (
	"net/http"
	"testing"
	"time"
)

// llamaLast is the last chunk of a llama.cpp server's OpenAI-compatible stream, in the shape
// its server writes (finish_reason with the timings beside the choices).
const llamaLast = `{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1,"id":"chatcmpl-x","model":"gpt-3.5-turbo","object":"chat.completion.chunk","usage":{"completion_tokens":12,"prompt_tokens":9,"total_tokens":21},"timings":{"cache_n":0,"prompt_n":9,"prompt_ms":31.25,"prompt_per_token_ms":3.47,"prompt_per_second":288,"predicted_n":12,"predicted_ms":240.5,"predicted_per_token_ms":20.04,"predicted_per_second":49.9}}`

func TestLlamaCppTimingsDecoded(t *testing.T) {
	want := ServerTimings{Format: FormatLlamaCpp, PromptEvalCount: 9, EvalCount: 12,
		PromptEvalDuration: 31250 * time.Microsecond, EvalDuration: 240500 * time.Microsecond}
	for _, tc := range []struct {
		name   string
		decode func(ResponseDecoder) Kind
		want   ServerTimings
	}{
		{"stream's last chunk", func(d ResponseDecoder) Kind {
			d.Event(nil, []byte(`{"choices":[{"index":0,"delta":{"content":"Hi"}}],"object":"chat.completion.chunk"}`))
			return d.Event(nil, []byte(llamaLast))
		}, want},
		{"body", func(d ResponseDecoder) Kind {
			return d.Body([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"timings":{"prompt_n":9,"prompt_ms":31.25,"predicted_n":12,"predicted_ms":240.5}}`))
		}, want},
		{"out of range and not numbers: not reported", func(d ResponseDecoder) Kind {
			return d.Event(nil, []byte(`{"choices":[],"timings":{"prompt_ms":-1,"predicted_ms":1e300,"prompt_n":"9","predicted_n":3}}`))
		}, ServerTimings{Format: FormatLlamaCpp, EvalCount: 3}},
		{"not an object", func(d ResponseDecoder) Kind {
			return d.Event(nil, []byte(`{"choices":[],"timings":[1,2]}`))
		}, ServerTimings{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewOpenAIChat()
			tc.decode(d)
			if got := d.Result().ServerTimings; got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTGIHeaderTimings(t *testing.T) {
	h := http.Header{}
	if _, ok := TGIHeaderTimings(h); ok {
		t.Error("no headers read as timings")
	}
	// As TGI's router writes them (whole milliseconds).
	for k, v := range map[string]string{"X-Total-Time": "312", "X-Validation-Time": "1", "X-Queue-Time": "40",
		"X-Inference-Time": "271", "X-Time-Per-Token": "27", "X-Prompt-Tokens": "5", "X-Generated-Tokens": "10"} {
		h.Set(k, v)
	}
	st, ok := TGIHeaderTimings(h)
	want := ServerTimings{Format: FormatTGI, QueueDuration: 40 * time.Millisecond, InferenceDuration: 271 * time.Millisecond,
		TotalDuration: 312 * time.Millisecond, PromptEvalCount: 5, EvalCount: 10}
	if !ok || st != want {
		t.Errorf("got %+v %v, want %+v", st, ok, want)
	}
	h.Set("X-Queue-Time", "-3")
	h.Set("X-Inference-Time", "soon")
	if st, _ := TGIHeaderTimings(h); st.QueueDuration != 0 || st.InferenceDuration != 0 {
		t.Errorf("bad values read as %+v", st)
	}
}

// checkTimings holds for any ServerTimings a decoder produced: nothing negative, nothing past
// the bound a server may report.
func checkTimings(t *testing.T, st ServerTimings) {
	t.Helper()
	for _, d := range []time.Duration{st.QueueDuration, st.InferenceDuration, st.LoadDuration, st.PromptEvalDuration, st.EvalDuration, st.TotalDuration} {
		if d < 0 || d > time.Duration(maxReportedMs*float64(time.Millisecond)) {
			t.Fatalf("duration out of range: %+v", st)
		}
	}
	if st.PromptEvalCount < 0 || st.EvalCount < 0 {
		t.Fatalf("negative count: %+v", st)
	}
}

// FuzzLlamaCppTimings feeds chunks and bodies that may carry llama.cpp's timings to the OpenAI
// chat decoder (the fast path hands them to the full one): the timings stay in range, and the
// decoder's other invariants hold.
func FuzzLlamaCppTimings(f *testing.F) {
	for _, s := range []string{llamaLast,
		`{"choices":[],"timings":{"prompt_ms":1e309,"predicted_ms":-0.0,"prompt_n":1e20,"predicted_n":-4}}`,
		`{"choices":[{"delta":{"content":"a"}}],"timings":{"prompt_ms":"1","predicted_ms":null}}`,
		`{"timings":{},"timings":{"prompt_ms":5}}`, `{"timings":null}`} {
		f.Add([]byte(s))
	}
	dec := NewOpenAIChat()
	f.Fuzz(func(t *testing.T, data []byte) {
		dec.Reset()
		checkDecoder(t, dec, data)
		dec.Event(nil, data)
		checkTimings(t, dec.Result().ServerTimings)
		dec.Body(data)
		checkTimings(t, dec.Result().ServerTimings)
		if f := dec.Result().ServerTimings.Format; f != "" && f != FormatLlamaCpp {
			t.Fatalf("format %q", f)
		}
	})
}

// FuzzTGIHeaderTimings reads any header values: the timings stay in range, and ok says whether
// one of the three times parsed.
func FuzzTGIHeaderTimings(f *testing.F) {
	f.Add("40", "271", "312", "10")
	f.Add("", "", "", "")
	f.Add("1e400", "-1", "NaN", "9999999999999999999999")
	f.Add(" 7 ", "0x10", "Inf", "-2")
	f.Fuzz(func(t *testing.T, queue, inference, total, generated string) {
		h := http.Header{}
		h.Set("X-Queue-Time", queue)
		h.Set("X-Inference-Time", inference)
		h.Set("X-Total-Time", total)
		h.Set("X-Generated-Tokens", generated)
		st, ok := TGIHeaderTimings(h)
		checkTimings(t, st)
		if !ok && st != (ServerTimings{}) {
			t.Fatalf("not ok, yet %+v", st)
		}
	})
}
