package decode

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// Usage objects with repeated keys are read the way the server's own clients read them: Go's
// encoding/json (into a map) and Python's json keep the last of duplicate keys, at every level.
// fastjson's Get keeps the first, which is what the decoder used to do (issue 35: a chunk with
// "completion_tokens":7 then "completion_tokens":9 gave 7).

// usageKeys are the members a generated usage object draws from; the details objects and the
// usage itself may repeat as well.
var usageKeys = []string{"prompt_tokens", "completion_tokens", "total_tokens", "completion_tokens_details", "prompt_tokens_details", "other"}

// usageFromBytes builds a chat chunk whose usage object is spelled by b: each pair of bytes is
// a member (a key from usageKeys, a value from the next byte). Repeated keys are the point.
func usageFromBytes(b []byte) string {
	member := func(k, v byte) string {
		key := usageKeys[int(k)%len(usageKeys)]
		switch key {
		case "completion_tokens_details", "prompt_tokens_details":
			inner := "reasoning_tokens"
			if key == "prompt_tokens_details" {
				inner = "cached_tokens"
			}
			// a details object, itself with a repeated count when v is odd
			if v%2 == 1 {
				return fmt.Sprintf("%q:{%q:%d,%q:%d}", key, inner, v/4, inner, v/2)
			}
			return fmt.Sprintf("%q:{%q:%d}", key, inner, v/2)
		}
		if v == 255 {
			return fmt.Sprintf("%q:null", key)
		}
		if v == 254 {
			return fmt.Sprintf("%q:\"12\"", key)
		}
		return fmt.Sprintf("%q:%d", key, v)
	}
	var objs []string
	var cur []string
	for i := 0; i+1 < len(b); i += 2 {
		if b[i] == 0xff { // starts another usage member at the top level
			objs = append(objs, "{"+strings.Join(cur, ",")+"}")
			cur = nil
			continue
		}
		cur = append(cur, member(b[i], b[i+1]))
	}
	objs = append(objs, "{"+strings.Join(cur, ",")+"}")
	var usages []string
	for _, o := range objs {
		usages = append(usages, `"usage":`+o)
	}
	return `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[],` + strings.Join(usages, ",") + `}`
}

// usageByEncodingJSON reads the usage of chunk as encoding/json does (last key wins), with
// the decoder's conventions: a count is a non-negative number up to 2^53, else -1; an all-zero
// usage is no usage.
func usageByEncodingJSON(t *testing.T, chunk string) (Usage, bool) {
	var m map[string]any
	if err := json.Unmarshal([]byte(chunk), &m); err != nil {
		t.Fatalf("the generated chunk is not JSON: %v\n%s", err, chunk)
	}
	u, ok := m["usage"].(map[string]any)
	if !ok {
		return NoUsage, false
	}
	count := func(v any) int64 {
		f, ok := v.(float64)
		if !ok || f < 0 || f > 1<<53 || math.IsNaN(f) {
			return -1
		}
		return int64(f)
	}
	detail := func(k, inner string) int64 {
		d, ok := u[k].(map[string]any)
		if !ok {
			return -1
		}
		return count(d[inner])
	}
	us := Usage{
		InputTokens: count(u["prompt_tokens"]), OutputTokens: count(u["completion_tokens"]),
		ReasoningTokens: detail("completion_tokens_details", "reasoning_tokens"),
		CachedTokens:    detail("prompt_tokens_details", "cached_tokens"),
	}
	if us.InputTokens <= 0 && us.OutputTokens <= 0 && count(u["total_tokens"]) <= 0 {
		return NoUsage, false
	}
	// xAI's convention (docs/metrics.md): a total that counts the reasoning tokens apart from
	// completion_tokens means the output count is their sum.
	if r := us.ReasoningTokens; r > 0 && us.InputTokens >= 0 && us.OutputTokens >= 0 && count(u["total_tokens"]) == us.InputTokens+us.OutputTokens+r {
		us.OutputTokens += r
	}
	return us, true
}

// checkUsageLastKey decodes chunk on the fast path (which falls back to fold on a repeated
// key) and on fold alone and compares both with encoding/json.
func checkUsageLastKey(t *testing.T, chunk string) {
	t.Helper()
	want, wantOK := usageByEncodingJSON(t, chunk)
	fast, full := newOpenAI(APIOpenAIChat), newOpenAI(APIOpenAIChat)
	full.fullOnly = true
	for _, d := range []*openAI{fast, full} {
		d.Event(nil, []byte(chunk))
		res := d.Result()
		if res.HasUsage != wantOK || (wantOK && res.Usage != want) {
			t.Fatalf("%s\ndecoder (fullOnly %v): usage %+v (has %v); encoding/json: %+v (has %v)", chunk, d.fullOnly, res.Usage, res.HasUsage, want, wantOK)
		}
	}
}

func TestUsageLastKeyWins(t *testing.T) {
	t.Parallel()
	for _, c := range []string{
		// the case: 7 then 9 output tokens; encoding/json and Python read 9
		`{"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":7,"total_tokens":10,"completion_tokens":9}}`,
		`{"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":7},"usage":{"prompt_tokens":4,"completion_tokens":9}}`,
		`{"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens_details":{"reasoning_tokens":1,"reasoning_tokens":2},"completion_tokens_details":{"reasoning_tokens":5}}}`,
		`{"id":"c","choices":[],"usage":{"prompt_tokens":3,"prompt_tokens":null}}`,
	} {
		checkUsageLastKey(t, c)
	}
	// and every generated shape of a few members
	for i := range 4096 {
		b := []byte{byte(i), byte(i * 7), byte(i >> 3), byte(i * 13), byte(i >> 6), byte(i*31 + 1)}
		checkUsageLastKey(t, usageFromBytes(b))
	}
}

// FuzzUsageLastKeyWins compares the decoder's usage with encoding/json's on usage objects with
// repeated keys at every level.
func FuzzUsageLastKeyWins(f *testing.F) {
	f.Add([]byte{1, 7, 2, 10, 1, 9})
	f.Add([]byte{0, 3, 1, 7, 0xff, 0, 0, 4, 1, 9})
	f.Add([]byte{3, 3, 3, 10, 4, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64 {
			return
		}
		checkUsageLastKey(t, usageFromBytes(b))
	})
}
