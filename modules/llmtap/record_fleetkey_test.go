package llmtap

import (
	"bytes"
	"strings"
	"testing"
)

// TestFleetKeyEnv: LLMTAP_FLEET_KEY in hex or base64 of 16 bytes or more keys the trace's
// block ids; a value that does not parse, or is too short, fails the record options with a
// message naming the variable; unset, no key (the recorder's per-process key).
func TestFleetKeyEnv(t *testing.T) {
	key := []byte("a fleet-wide key of 32 bytes....")
	cases := []struct {
		name, val string
		want      []byte
		err       string
	}{
		{"unset", "", nil, ""},
		{"hex", "000102030405060708090a0b0c0d0e0f", []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, ""},
		{"base64", "YSBmbGVldC13aWRlIGtleSBvZiAzMiBieXRlcy4uLi4=", key, ""},
		{"too short", "c2hvcnQ=", nil, "the key is 5 bytes; want at least 16 bytes"},
		{"not a key", "not a key!", nil, "want at least 16 bytes in hex or base64"},
	}
	for _, tc := range cases {
		t.Setenv(FleetKeyEnv, tc.val)
		c := &RecordConfig{Dir: t.TempDir()}
		o, err := c.options()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), FleetKeyEnv) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one naming %s and saying %q", tc.name, err, FleetKeyEnv, tc.err)
			}
			continue
		}
		if err != nil || !bytes.Equal(o.FleetKey, tc.want) {
			t.Errorf("%s: key %q, err %v; want %q", tc.name, o.FleetKey, err, tc.want)
		}
	}
}
