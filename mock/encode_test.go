package mock

import (
	"encoding/json"
	"testing"
)

// FuzzAppendJSONString checks the hand-written string encoder against
// encoding/json: the output must decode to what encoding/json's own
// encoding decodes to (invalid UTF-8 replaced byte by byte).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"uote\back`, "ctl\x00\x1f\n\r\t", "é€😀", "bad\xff\xfe", "\xe2\x82", "<&>\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendJSONString([]byte("x"), s)[1:]
		var dec string
		if err := json.Unmarshal(got, &dec); err != nil {
			t.Fatalf("output %q is not a JSON string: %v", got, err)
		}
		ref, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if dec != want {
			t.Fatalf("decodes to %q, encoding/json's to %q", dec, want)
		}
	})
}

func TestAppendUsage(t *testing.T) {
	tests := []struct {
		prompt, completion, reasoning, cached int
		want                                  string
	}{
		{3, 4, 0, 0, `"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}`},
		{0, 5, 2, 0, `"usage":{"prompt_tokens":0,"completion_tokens":5,"total_tokens":5,"completion_tokens_details":{"reasoning_tokens":2}}`},
		{10, 1, 0, 4, `"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":4}}`},
		{2, 1, 0, 9, `"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3,"prompt_tokens_details":{"cached_tokens":2}}`},
	}
	for _, tt := range tests {
		if got := string(appendUsage(nil, tt.prompt, tt.completion, tt.reasoning, tt.cached)); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

func TestAppendAnthropicInput(t *testing.T) {
	for _, tt := range []struct {
		prompt, cached, written int
		want                    string
	}{
		{10, 0, 0, `"input_tokens":10`},
		{10, 4, 3, `"input_tokens":3,"cache_read_input_tokens":4,"cache_creation_input_tokens":3`},
		{5, 4, 3, `"input_tokens":0,"cache_read_input_tokens":4,"cache_creation_input_tokens":1`},
	} {
		if got := string(appendAnthropicInput(nil, tt.prompt, tt.cached, tt.written)); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}
