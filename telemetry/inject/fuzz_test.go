package inject

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// FuzzAddIncludeUsage checks, for any body: an injected body is valid JSON that streams with
// include_usage and whose other top-level members decode to the same values; stream_options'
// other members too. Any other result returns the body untouched.
func FuzzAddIncludeUsage(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		`{"stream":true,"stream_options":null}`,
		`{"stream":true,"stream_options":{"include_usage":false,"x":[1,{"y":"}"}]}}`,
		`{"stream":true,"stream_options":{}}`,
		`{"stream":true,"stream_options":{"include_usage":true}}`,
		`{"stream":true,"stre\u0061m_options":{"a":"\"{"}}`,
		`{"stream":false}`,
		` [1,2] `,
		`{"stream":true,"stream":true}`,
	} {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile("../decode/testdata/chat.request.json"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		got, res := AddIncludeUsage(body)
		if !bytes.Equal(body, orig) {
			t.Fatal("the input was modified")
		}
		if res != Injected {
			if !bytes.Equal(got, body) {
				t.Fatalf("result %v but the body changed", res)
			}
			return
		}
		checkInjected(t, body, got)
		var before, after map[string]json.RawMessage
		if json.Unmarshal(body, &before) != nil {
			return // fastjson accepts a few inputs encoding/json does not (invalid UTF-8)
		}
		if err := json.Unmarshal(got, &after); err != nil {
			t.Fatalf("encoding/json rejects the injected body: %v\n%s", err, got)
		}
		for k, v := range before {
			if k == "stream_options" {
				continue
			}
			if !jsonEqual(v, after[k]) {
				t.Fatalf("member %q changed: %s -> %s", k, v, after[k])
			}
		}
		var so map[string]json.RawMessage
		if json.Unmarshal(before["stream_options"], &so) == nil {
			var so2 map[string]json.RawMessage
			json.Unmarshal(after["stream_options"], &so2)
			for k, v := range so {
				if k != "include_usage" && !jsonEqual(v, so2[k]) {
					t.Fatalf("stream_options member %q changed: %s -> %s", k, v, so2[k])
				}
			}
		}
	})
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// FuzzFilter feeds a stream whole and split into writes (the first byte seeds the splits) and
// compares the output with a reference written the obvious way: split the whole stream into
// events, drop the usage-only ones, join the rest.
func FuzzFilter(f *testing.F) {
	f.Add(byte(0), []byte(content+finish+usageOnly+done))
	f.Add(byte(7), []byte(content+"data: {\"choices\":[],\r\ndata: \"usage\":{}}\r\n\r\n"+done))
	f.Add(byte(3), []byte("event: x\n"+usageOnly+": c\r\r"+usageOnly))
	if b, err := os.ReadFile("../decode/testdata/chat.txt"); err == nil {
		f.Add(byte(1), b)
	}
	f.Fuzz(func(t *testing.T, seed byte, in []byte) {
		if len(in) > 64<<10 {
			return
		}
		var want []byte
		ref := NewFilter(nil, 0)
		rest := in
		for {
			n := eventEnd(rest)
			if n < 0 {
				break
			}
			if !ref.usageOnly(rest[:n]) {
				want = append(want, rest[:n]...)
			}
			rest = rest[n:]
		}
		want = append(want, rest...)

		var out bytes.Buffer
		flt := NewFilter(&out, 0)
		x := uint32(seed)*2654435761 | 1
		for data := in; len(data) > 0; {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			n := min(int(x%64), len(data))
			if _, err := flt.Write(data[:n]); err != nil {
				t.Fatal(err)
			}
			data = data[n:]
		}
		flt.Close()
		if !bytes.Equal(out.Bytes(), want) {
			t.Fatalf("split writes gave\n%q\nthe reference\n%q", out.Bytes(), want)
		}
	})
}
