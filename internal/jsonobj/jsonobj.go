// Package jsonobj writes JSON objects whose members keep the order they are given in, as
// AIPerf's files and llmtap's summaries list them (encoding/json sorts a map's keys).
package jsonobj

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Member is one member of an object: its key and its value, encoded by encoding/json. It is
// an alias of a struct type literal, so that a caller in any package writes members as
// {key, value} pairs.
type Member = struct {
	Key   string
	Value any
}

// Marshal writes members as one JSON object, in their order.
func Marshal(members []Member) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(m.Key)
		vb, err := json.Marshal(m.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Key, err)
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
