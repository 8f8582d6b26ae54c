package expose

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/llmtap/llmtap/telemetry/record"
)

// The slots of a Late: one per placeholder a host exposes.
const (
	SlotTTFT = iota
	SlotITL
	SlotInputTokens
	SlotOutputTokens
	SlotTenant
	SlotQueue
	SlotPrefill
	SlotDecode
	SlotNetwork
	LateSlots // the number of slots
)

// Late holds the placeholder values of one request, filled when its response ends. A host
// installs the slots as the request's variables before the request is proxied and fills them
// afterwards, so its variables map is never written while the proxy's transport may read it on
// another goroutine: a dial the transport goes on with after the request got a connection
// reads the request's variables, and a map written then is a data race. A slot prints as its
// value (fmt, and so Caddy's placeholders) and encodes as it in JSON (a number stays a number
// in a JSON access log); it is "" until set. Late is safe for concurrent use.
type Late struct {
	mu    sync.RWMutex
	vals  [LateSlots]any
	slots [LateSlots]Slot
}

// Slot is one value of a Late.
type Slot struct {
	l *Late
	i int
}

// NewLate returns a Late with every slot "".
func NewLate() *Late {
	l := &Late{}
	for i := range l.slots {
		l.slots[i] = Slot{l: l, i: i}
		l.vals[i] = ""
	}
	return l
}

// Slot returns slot i, to install as a variable.
func (l *Late) Slot(i int) *Slot { return &l.slots[i] }

// Set sets slot i to v (a float64, an int64 or a string).
func (l *Late) Set(i int, v any) {
	l.mu.Lock()
	l.vals[i] = v
	l.mu.Unlock()
}

// SetRecord sets the measured slots from rec when its response has ended: TTFT, ITL, the token
// counts and the time split, each "" when not known (Ms, ITL, Count, Split).
func (l *Late) SetRecord(rec *record.Record) {
	q, p, d, n := Split(rec)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.vals[SlotTTFT] = Ms(rec.TTFTMs)
	l.vals[SlotITL] = ITL(rec)
	l.vals[SlotInputTokens] = Count(rec.InputTokens, rec.InputTokensSource)
	l.vals[SlotOutputTokens] = Count(rec.OutputTokens, rec.OutputTokensSource)
	l.vals[SlotQueue], l.vals[SlotPrefill], l.vals[SlotDecode], l.vals[SlotNetwork] = q, p, d, n
}

// Value returns the slot's value.
func (s *Slot) Value() any {
	s.l.mu.RLock()
	defer s.l.mu.RUnlock()
	return s.l.vals[s.i]
}

// Format prints the value as Caddy prints a variable's: numbers in their shortest form.
// (Format rather than String: a Stringer would be logged as a string by zap.)
func (s *Slot) Format(f fmt.State, _ rune) {
	var out string
	switch v := s.Value().(type) {
	case float64:
		out = strconv.FormatFloat(v, 'f', -1, 64)
	case int64:
		out = strconv.FormatInt(v, 10)
	case string:
		out = v
	default:
		out = fmt.Sprint(v)
	}
	_, _ = f.Write([]byte(out))
}

// MarshalJSON encodes the value itself.
func (s *Slot) MarshalJSON() ([]byte, error) { return json.Marshal(s.Value()) }
