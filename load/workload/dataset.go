package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// Dataset types: AIPerf's --custom-dataset-type values llmtap reads, and ShareGPT-shaped JSON.
const (
	DatasetSingleTurn = "single_turn"
	DatasetMultiTurn  = "multi_turn"
	DatasetRandomPool = "random_pool"
	DatasetShareGPT   = "sharegpt"
)

// DatasetTypes lists the types ReadDataset reads.
var DatasetTypes = []string{DatasetSingleTurn, DatasetMultiTurn, DatasetRandomPool, DatasetShareGPT}

// Bounds on a dataset file, so that a file from anywhere cannot take the generator's memory.
const (
	// MaxDatasetBytes bounds the file.
	MaxDatasetBytes = 1 << 30
	// MaxDatasetLine bounds one JSONL line (one ShareGPT entry).
	MaxDatasetLine = 16 << 20
	// MaxDatasetConversations bounds the conversations (rows, entries) read.
	MaxDatasetConversations = 1_000_000
	// maxTurnDelay bounds a turn's delay.
	maxTurnDelay = time.Hour
)

// Dataset is a custom dataset's conversations, and how they are drawn.
type Dataset struct {
	Conversations []Conversation
	// Sampling is how sessions draw the conversations (SamplingStrategies); empty: the
	// preferred strategy of Kind (PreferredSampling), as in AIPerf.
	Sampling string
	// Kind is the dataset type it was read as; empty for synthetic conversations.
	Kind string

	once    sync.Once
	sampler *Sampler
	err     error
}

// Sampler returns the sampler of the dataset's conversations, seeded by seed (the first call
// fixes the seed), or the error of an unknown Sampling.
func (d *Dataset) Sampler(seed uint64) (*Sampler, error) {
	d.once.Do(func() { d.sampler, d.err = NewSampler(d.Sampling, d.Kind, len(d.Conversations), seed) })
	return d.sampler, d.err
}

// Conversation returns the conversation session i sends, drawn by the dataset's sampling
// strategy with seed (an unknown strategy, which Sampler reports, draws in order).
func (d *Dataset) Conversation(i int, seed uint64) *Conversation {
	if s, err := d.Sampler(seed); err == nil {
		return &d.Conversations[s.Index(i)]
	}
	return &d.Conversations[i%len(d.Conversations)]
}

// LoadDataset reads the dataset file at path (see ReadDataset), counting ShareGPT's lengths
// with count (nil: o200k_base); a directory, as AIPerf's random_pool also takes, is refused.
func LoadDataset(path, kind string, count tokens.Counter) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory: give one file", path)
	}
	if st.Size() > MaxDatasetBytes {
		return nil, fmt.Errorf("%s: %d bytes, over the %d-byte bound", path, st.Size(), MaxDatasetBytes)
	}
	return ReadDatasetCounted(f, path, kind, count)
}

// ReadDataset reads a dataset of type kind from r, named name in errors (file:line):
//
//   - single_turn: JSONL, a one-turn conversation per line: {"text": …} or {"texts": […]},
//     optional "role", "output_length" (sent as the output limit) and "extra" (members merged
//     into the body);
//   - multi_turn: JSONL, a conversation per line: {"session_id": …, "turns": [turn, …]}, each
//     turn as a single_turn line plus "delay" (milliseconds after the previous response); a
//     leading "role": "system" turn becomes the conversation's system message;
//   - random_pool: single_turn lines (drawn in a shuffled order by default, as AIPerf does);
//   - sharegpt: a JSON array of {"conversations": [{"from": …, "value": …}, …]}: the first
//     message is sent as the prompt with the second's length in o200k tokens (ReadDatasetCounted:
//     the given tokenizer's) as the output limit, and entries are kept as AIPerf's ShareGPT
//     loader keeps them (prompt 4–1024 tokens, output at least 4, both together at most 2048).
//
// Images, audio and timestamps (fixed schedules are `llmtap replay`'s) are refused with the
// line that has them; every bad row is an error naming its line.
func ReadDataset(r io.Reader, name, kind string) (*Dataset, error) {
	return ReadDatasetCounted(r, name, kind, nil)
}

// ReadDatasetCounted is ReadDataset with ShareGPT's lengths counted by count (nil: o200k_base),
// as AIPerf counts them with the model's tokenizer.
func ReadDatasetCounted(r io.Reader, name, kind string, count tokens.Counter) (*Dataset, error) {
	if count == nil {
		count = tokens.Default
	}
	r = io.LimitReader(r, MaxDatasetBytes+1)
	d := &Dataset{Kind: kind}
	switch kind {
	case DatasetSingleTurn, DatasetMultiTurn, DatasetRandomPool:
		err := trace.EachLine(r, MaxDatasetLine, func(n int, line []byte, _ bool) error {
			if len(bytes.TrimSpace(line)) == 0 {
				return nil
			}
			if len(d.Conversations) >= MaxDatasetConversations {
				return fmt.Errorf("%s:%d: more than %d conversations", name, n, MaxDatasetConversations)
			}
			c, err := parseRow(line, kind)
			if err != nil {
				return fmt.Errorf("%s:%d: %w", name, n, err)
			}
			d.Conversations = append(d.Conversations, c)
			return nil
		})
		if err != nil {
			return nil, err
		}
	case DatasetShareGPT:
		if err := readShareGPT(r, name, d, count); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("dataset type %q: want one of %s (mooncake_trace files are replayed by llmtap replay)", kind, strings.Join(DatasetTypes, ", "))
	}
	if len(d.Conversations) == 0 {
		return nil, fmt.Errorf("%s: no conversations", name)
	}
	return d, nil
}

// turnRow is a single_turn line, or a turn of a multi_turn line.
type turnRow struct {
	Type         *string           `json:"type"`
	Text         *string           `json:"text"`
	Texts        []json.RawMessage `json:"texts"`
	Image        json.RawMessage   `json:"image"`
	Images       json.RawMessage   `json:"images"`
	Audio        json.RawMessage   `json:"audio"`
	Audios       json.RawMessage   `json:"audios"`
	Timestamp    json.RawMessage   `json:"timestamp"`
	Delay        *float64          `json:"delay"`
	Role         *string           `json:"role"`
	OutputLength *int              `json:"output_length"`
	Extra        json.RawMessage   `json:"extra"`
}

type multiRow struct {
	Type      *string           `json:"type"`
	SessionID json.RawMessage   `json:"session_id"`
	Turns     []json.RawMessage `json:"turns"`
}

// textObject is AIPerf's Text: {"name": …, "contents": […]}.
type textObject struct {
	Contents []string `json:"contents"`
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// checkType accepts a missing "type" or the expected one.
func checkType(t *string, kind string) error {
	if t != nil && *t != kind {
		return fmt.Errorf("\"type\" %q in a %s dataset", *t, kind)
	}
	return nil
}

func parseRow(line []byte, kind string) (Conversation, error) {
	if kind == DatasetMultiTurn {
		var m multiRow
		if err := json.Unmarshal(line, &m); err != nil {
			return Conversation{}, err
		}
		if err := checkType(m.Type, kind); err != nil {
			return Conversation{}, err
		}
		if len(m.Turns) == 0 {
			return Conversation{}, errors.New("no turns: at least one turn must be provided")
		}
		if len(m.Turns) > MaxTurns {
			return Conversation{}, fmt.Errorf("%d turns, over the bound of %d", len(m.Turns), MaxTurns)
		}
		var c Conversation
		for i, raw := range m.Turns {
			t, err := parseTurn(raw, "")
			if err != nil {
				return Conversation{}, fmt.Errorf("turn %d: %w", i, err)
			}
			if i == 0 && t.Role == RoleSystem && len(m.Turns) > 1 {
				c.System = strings.Join(append([]string{t.Text}, t.Texts...), "\n")
				continue
			}
			if len(c.Turns) == 0 {
				t.Delay = 0 // the first turn is sent when its session starts
			}
			c.Turns = append(c.Turns, t)
		}
		return c, nil
	}
	t, err := parseTurn(line, kind)
	if err != nil {
		return Conversation{}, err
	}
	if t.Delay != 0 {
		return Conversation{}, errors.New("\"delay\" in a single-turn row: use a multi_turn dataset")
	}
	return Conversation{Turns: []Turn{t}}, nil
}

// parseTurn reads one turn; kind, when set, is the dataset type its "type" must name.
func parseTurn(raw []byte, kind string) (Turn, error) {
	var r turnRow
	if err := json.Unmarshal(raw, &r); err != nil {
		return Turn{}, err
	}
	if kind != "" {
		if err := checkType(r.Type, kind); err != nil {
			return Turn{}, err
		}
	}
	for _, f := range []struct {
		name string
		v    json.RawMessage
	}{{"image", r.Image}, {"images", r.Images}, {"audio", r.Audio}, {"audios", r.Audios}} {
		if !isNull(f.v) {
			return Turn{}, fmt.Errorf("%q: llmtap bench sends text only", f.name)
		}
	}
	if !isNull(r.Timestamp) {
		return Turn{}, errors.New("\"timestamp\": a fixed schedule is replayed by llmtap replay, not bench")
	}
	var t Turn
	switch {
	case r.Text != nil && len(r.Texts) > 0:
		return Turn{}, errors.New("text and texts cannot be set together")
	case r.Text != nil:
		t.Text = *r.Text
	case len(r.Texts) > 0:
		for i, x := range r.Texts {
			var s string
			if err := json.Unmarshal(x, &s); err == nil {
				t.Texts = append(t.Texts, s)
				continue
			}
			var o textObject
			if err := json.Unmarshal(x, &o); err != nil {
				return Turn{}, fmt.Errorf("texts[%d]: want a string or {\"contents\": [...]}", i)
			}
			t.Texts = append(t.Texts, o.Contents...)
		}
		if len(t.Texts) == 1 {
			t.Text, t.Texts = t.Texts[0], nil
		}
	}
	if t.Text == "" && len(t.Texts) == 0 {
		return Turn{}, errors.New("no text: at least one of text or texts must be provided")
	}
	if r.Role != nil {
		t.Role = *r.Role
	}
	if r.OutputLength != nil {
		if *r.OutputLength < 0 || *r.OutputLength > maxPromptTokens {
			return Turn{}, fmt.Errorf("output_length %d: want 0 to %d", *r.OutputLength, maxPromptTokens)
		}
		t.MaxTokens = *r.OutputLength
	}
	if r.Delay != nil {
		d := *r.Delay
		if !(d >= 0) || d > float64(maxTurnDelay/time.Millisecond) {
			return Turn{}, fmt.Errorf("delay %v ms: want 0 to %d", d, maxTurnDelay/time.Millisecond)
		}
		t.Delay = time.Duration(d * float64(time.Millisecond))
	}
	if !isNull(r.Extra) {
		ex, err := parseExtraObject(string(r.Extra))
		if err != nil {
			return Turn{}, errors.New("\"extra\": want a JSON object")
		}
		t.Extra = ex
	}
	return t, nil
}

// ShareGPT entry filters, as AIPerf's ShareGPT loader (after vLLM's benchmark dataset).
const (
	shareGPTMinLen    = 4
	shareGPTMaxPrompt = 1024
	shareGPTMaxTotal  = 2048
)

type shareGPTEntry struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

func readShareGPT(r io.Reader, name string, d *Dataset, count tokens.Counter) error {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return fmt.Errorf("%s: want a JSON array of ShareGPT entries", name)
	}
	for i := 0; dec.More(); i++ {
		if i >= MaxDatasetConversations {
			return fmt.Errorf("%s: more than %d entries", name, MaxDatasetConversations)
		}
		off := dec.InputOffset()
		var e shareGPTEntry
		if err := dec.Decode(&e); err != nil {
			return fmt.Errorf("%s: entry %d (byte %d): %w", name, i, off, err)
		}
		if dec.InputOffset()-off > MaxDatasetLine {
			return fmt.Errorf("%s: entry %d (byte %d): over %d bytes", name, i, off, MaxDatasetLine)
		}
		if len(e.Conversations) < 2 {
			continue
		}
		prompt, reply := e.Conversations[0].Value, e.Conversations[1].Value
		pl, err1 := count.Count([]byte(prompt))
		ol, err2 := count.Count([]byte(reply))
		if err1 != nil || err2 != nil || pl < shareGPTMinLen || pl > shareGPTMaxPrompt || ol < shareGPTMinLen || pl+ol > shareGPTMaxTotal {
			continue
		}
		d.Conversations = append(d.Conversations, Conversation{Turns: []Turn{{Text: prompt, MaxTokens: ol}}})
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%s: after the last entry: %w", name, err)
	}
	return nil
}
