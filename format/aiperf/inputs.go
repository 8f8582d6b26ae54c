package aiperf

import (
	"cmp"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"sync"
)

// InputsFile is the name of the file of the payloads a run sent, AIPerf's inputs.json.
const InputsFile = "inputs.json"

// maxInputsBytes bounds the payloads inputs.json keeps: a long run sends more bodies than are
// worth holding; the ones past the bound are left out and the file says how many (a member
// AIPerf's InputsFile model allows).
const maxInputsBytes = 64 << 20

// Inputs collects what inputs.json holds: AIPerf's InputsFile, {"data": [{"session_id",
// "payloads": [one request body per turn]}]}, one entry per conversation in session_num order
// (a single-turn request is a conversation of its own, named by its x_request_id; a session by
// its conversation_id). The payloads are the bodies llmtap sent, verbatim: a later turn's body
// holds the turns before it and the server's replies, where AIPerf's dataset file holds each
// turn alone. Safe for concurrent use.
type Inputs struct {
	mu       sync.Mutex
	bytes    int
	left     int
	sessions map[string]*inputSession
}

type inputSession struct {
	ID       string            `json:"session_id"`
	Payloads []json.RawMessage `json:"payloads"`
	num      int
	turns    []int
}

// Add keeps the body of a request of session id (session_num num), turn turn (from 1; 0 when
// the request has no turns). It is on the send path, so it only keeps a reference (bodies are
// not changed once built); Write leaves out a body that is not a JSON object.
func (in *Inputs) Add(id string, num, turn int, body []byte) {
	if len(body) == 0 || body[0] != '{' {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.bytes+len(body) > maxInputsBytes {
		in.left++
		return
	}
	in.bytes += len(body)
	s := in.sessions[id]
	if s == nil {
		if in.sessions == nil {
			in.sessions = map[string]*inputSession{}
		}
		s = &inputSession{ID: id, num: num}
		in.sessions[id] = s
	}
	s.Payloads = append(s.Payloads, body)
	s.turns = append(s.turns, turn)
}

// Write writes inputs.json into dir and returns its path.
func (in *Inputs) Write(dir string) (string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	data := make([]*inputSession, 0, len(in.sessions))
	for _, s := range in.sessions {
		// The turns of a session arrive in order, but sort anyway: a retry could reorder them.
		idx := make([]int, len(s.turns))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(s.turns[a], s.turns[b]) })
		p := make([]json.RawMessage, 0, len(idx))
		for _, k := range idx {
			if json.Valid(s.Payloads[k]) {
				p = append(p, s.Payloads[k])
			} else {
				in.left++
			}
		}
		s.Payloads = p
		data = append(data, s)
	}
	slices.SortFunc(data, func(a, b *inputSession) int { return cmp.Or(cmp.Compare(a.num, b.num), cmp.Compare(a.ID, b.ID)) })
	p := filepath.Join(dir, InputsFile)
	doc := struct {
		Data []*inputSession `json:"data"`
		// LeftOut counts the payloads left out: past maxInputsBytes, or not JSON (llmtap's
		// member).
		LeftOut int `json:"payloads_left_out,omitempty"`
	}{data, in.left}
	if err := WriteFile(p, func(w io.Writer) error { return json.NewEncoder(w).Encode(doc) }); err != nil {
		return "", err
	}
	return p, nil
}
