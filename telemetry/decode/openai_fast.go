package decode

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// The OpenAI fast path. Parsing every chunk of a stream with fastjson costs more than all the
// rest of the proxy's per-event work: it builds a value tree of the whole chunk (id, created,
// system_fingerprint, logprobs…) to read a handful of fields. The chunks of a stream all have
// the same few shapes, so Event first tries a single-pass scanner that walks the chunk once,
// validating it as it goes, and records only what fold would use: per choice its index, finish
// reason and the generated strings; the model; a usage object made of plain counts.
//
// The fast path is an optimisation, never a second interpretation. Whenever it meets something
// it does not fully handle (invalid JSON, a key it would have to decode, a repeated key that
// matters, content parts, a "message", an error, a number fastjson would read best effort, too
// many choices or tool calls, deep nesting) it gives up before touching the result, and the
// event goes through fold, so results are the same either way (FuzzChatFastVsFull checks this).
// Only a complete, valid scan is committed, in the order fold would apply it.

// Bounds of what one chunk may hold on the fast path. Streams send one choice per chunk (vLLM
// and SGLang interleave the choices of n > 1 in separate chunks) and at most a few tool calls;
// more goes through fold.
const (
	fastMaxChoices = 4
	fastMaxTools   = 8
)

// fastFunction is a tool call's function (or a legacy function_call): its name and arguments.
type fastFunction struct{ name, args span }

// fastChoice is what the scanner found in one object of choices.
type fastChoice struct {
	idx                                 int64 // -1 for an index that is not a number
	finish, text                        span
	content, refusal, reasoning, reason span // reason is the "reasoning" spelling
	fn                                  fastFunction
	tools, ntools                       uint8 // the choice's tool calls: chatScan.tools[tools:tools+ntools]
}

// chatScan is the scanner's record of one event, reused from event to event.
type chatScan struct {
	choices  [fastMaxChoices]fastChoice
	nchoices int
	tools    [fastMaxTools]fastFunction
	ntools   int
	model    span
	usage    Usage
	usageOK  bool
	total    int64 // the usage's total_tokens, for reasoningApart

	// memo is the prefix of the last chunk up to its "choices" key, and the scanner's state
	// there. The chunks of a stream repeat the same id, object, created, model and fingerprint
	// byte for byte, so a chunk that starts with the same bytes resumes the scan at "choices"
	// instead of walking them again: identical bytes give the identical state, so the result is
	// exactly that of a full scan (FuzzChatFastVsFull feeds whole streams to check it).
	memo struct {
		prefix []byte
		seen   uint8
		model  span
	}

	// last is the last chunk decoded, when lastOK, and the fields above are its scan: the
	// next chunk is first decoded by difference from it (see rescan).
	last    []byte
	lastOK  bool
	rescans int // chunks decoded by difference, for tests

	// lastOff is the largest offset of a recorded span of the last chunk (0 for none). The
	// token's string is usually the last one in a chunk, so a span that changed length seldom
	// has spans after it to shift, and shift can tell so without walking them.
	lastOff int32
}

// memoMax bounds the remembered prefix, and lastMax the remembered chunk: longer ones are
// scanned in full every time.
const (
	memoMax = 512
	lastMax = 2048
)

// scan decodes a chunk into s: by difference from the last chunk when it can, else in full.
func (s *chatScan) scan(b []byte) bool {
	if s.lastOK && len(b) <= lastMax && s.rescan(b) {
		return true
	}
	s.lastOK = false
	if !s.scanFull(b) {
		return false
	}
	if len(b) <= lastMax {
		s.last = append(s.last[:0], b...)
		s.lastOK = true
		s.lastOff = 0
		s.spans(func(sp *span) bool {
			s.lastOff = max(s.lastOff, sp.off)
			return true
		})
	}
	return true
}

// rescan decodes b by difference from the last chunk. The chunks of a stream differ from one
// another in the token text alone: when b equals the last chunk byte for byte except inside one
// string value that the scan recorded (content, reasoning, text, tool arguments…), and that
// string's new value scans to the matching closing quote, then every byte around it is the
// same and so is the scan: the result is the last one with that span replaced and the spans
// after it shifted. It is exactly the result of a full scan (FuzzChatFastVsFull feeds whole
// streams to check it), for about the cost of comparing the two chunks.
func (s *chatScan) rescan(b []byte) bool {
	if s.rescanContent(b) {
		return true
	}
	old := s.last
	// The prefix up to "choices" is usually the same: one vectorised comparison skips it.
	k := len(s.memo.prefix)
	if k > len(old) || k > len(b) || string(old[:k]) != string(b[:k]) {
		k = 0
	}
	p := k + commonPrefix(old[k:], b[k:])
	if p == len(old) && p == len(b) {
		s.rescans++
		return true // the same chunk again
	}
	q := commonSuffix(old[p:], b[p:])
	sp := s.spanAround(int32(p), int32(len(old)-q))
	if sp == nil {
		return false
	}
	delta := int32(len(b) - len(old))
	ns, _, ok := scanString(b, int(sp.off)-1)
	if !ok || ns.end != sp.end+delta {
		return false
	}
	s.replace(sp, ns, b)
	return true
}

// replace makes b, which differs from the last chunk only inside span sp, the last chunk: sp
// becomes ns and the spans after it shift by the difference in length.
func (s *chatScan) replace(sp *span, ns span, b []byte) {
	s.shift(sp.off, int32(len(b)-len(s.last)))
	*sp = ns
	s.last = append(s.last[:0], b...)
	s.rescans++
}

// rescanContent is rescan for the usual case, checked first and directly: b differs from the
// last chunk only inside the first choice's content. Instead of looking for where the chunks
// differ, it checks that b has the last chunk's bytes up to that string's opening quote and
// from its closing quote on, the new string scanning in between: the same condition rescan
// derives, so the same exact result.
func (s *chatScan) rescanContent(b []byte) bool {
	old := s.last
	if s.nchoices != 1 {
		return false
	}
	sp := &s.choices[0].content
	off, oldNext := int(sp.off), int(sp.end)+1
	if off <= 0 || off > len(b) || string(b[:off]) != string(old[:off]) {
		return false
	}
	ns, next, ok := scanString(b, off-1)
	if !ok || len(b)-next != len(old)-oldNext || string(b[next:]) != string(old[oldNext:]) {
		return false
	}
	s.replace(sp, ns, b)
	return true
}

// spans calls f with every recorded string span of the scan until f returns false.
func (s *chatScan) spans(f func(*span) bool) {
	if !f(&s.model) {
		return
	}
	for k := range s.nchoices {
		c := &s.choices[k]
		for _, sp := range [...]*span{&c.content, &c.text, &c.reasoning, &c.reason, &c.refusal, &c.finish, &c.fn.name, &c.fn.args} {
			if !f(sp) {
				return
			}
		}
	}
	for t := range s.ntools {
		if !f(&s.tools[t].args) || !f(&s.tools[t].name) {
			return
		}
	}
}

// spanAround returns the recorded string span whose value holds the bytes [from, to) of the
// last chunk, or nil.
func (s *chatScan) spanAround(from, to int32) (found *span) {
	s.spans(func(sp *span) bool {
		if sp.off > 0 && sp.off <= from && to <= sp.end {
			found = sp
			return false
		}
		return true
	})
	return found
}

// shift moves the recorded spans that start after off by delta bytes.
func (s *chatScan) shift(off, delta int32) {
	if delta == 0 || s.lastOff <= off {
		return
	}
	s.lastOff += delta
	s.spans(func(sp *span) bool {
		if sp.off > off {
			sp.off += delta
			sp.end += delta
		}
		return true
	})
}

// commonPrefix returns how many leading bytes a and b share, eight at a time.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)>>3
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// commonSuffix returns how many trailing bytes a and b share, eight at a time.
func commonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[len(a)-i-8:]) ^ binary.LittleEndian.Uint64(b[len(b)-i-8:]); x != 0 {
			return i + bits.LeadingZeros64(x)>>3
		}
	}
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// Bits of the keys an object may name only once on the fast path: the full path reads a
// repeated key in one place with Visit (the last wins) and in another with Get (the first
// wins), a difference not worth reproducing.
const (
	keyA = 1 << iota
	keyB
	keyC
	keyD
	keyE
	keyF
)

// once records key bit k in seen and reports whether it was new.
func once(seen *uint8, k uint8) bool {
	if *seen&k != 0 {
		return false
	}
	*seen |= k
	return true
}

// fastEvent decodes a chunk on the fast path. ok is false, and the result untouched, when the
// chunk must go through fold instead.
func (d *openAI) fastEvent(data []byte) (Kind, bool) {
	if !d.fast.scan(data) {
		return 0, false
	}
	return d.commit(data), true
}

// scanFull walks the top-level object of a chunk.
func (s *chatScan) scanFull(b []byte) bool {
	s.nchoices, s.ntools, s.model, s.usageOK = 0, 0, span{}, false
	if len(b) == 0 || b[0] != '{' || len(b) > math.MaxInt32 {
		return false
	}
	i, empty := scanOpen(b, 0, '}')
	if empty {
		return skipWS(b, i) == len(b)
	}
	var seen uint8
	resumed := false
	if m := &s.memo; len(m.prefix) > 0 && len(b) > len(m.prefix) && string(b[:len(m.prefix)]) == string(m.prefix) {
		i, seen, s.model, resumed = len(m.prefix), m.seen, m.model, true
	}
	for {
		key, j, ok := scanKey(b, i)
		if !ok {
			return false
		}
		switch string(key) {
		case "choices":
			if !once(&seen, keyA) {
				return false
			}
			if !resumed && seen&keyC == 0 && i <= memoMax {
				// Remember the state before "choices" (when no usage was read before it).
				s.memo.prefix = append(s.memo.prefix[:0], b[:i]...)
				s.memo.seen, s.memo.model = seen&^keyA, s.model
			}
			j, ok = s.scanChoices(b, j)
		case "model":
			if !once(&seen, keyB) {
				return false
			}
			if b[j] == '"' {
				s.model, j, ok = scanString(b, j)
			} else {
				j, ok = skipValue(b, j, 1) // not a string: no model, as GetStringBytes reads it
			}
		case "usage":
			if !once(&seen, keyC) {
				return false
			}
			j, ok = s.scanUsage(b, j)
		case "timings", "x_groq":
			// llama.cpp's timings and Groq's x_groq (its usage), on the first and last chunks
			// of a stream only: fold reads them.
			return false
		case "error":
			// A null error is no error; any other goes through fold, which reads errors.
			if !once(&seen, keyD) {
				return false
			}
			j, ok = scanLiteral(b, j, "null")
		case "object":
			if !once(&seen, keyE) {
				return false
			}
			if b[j] == '"' {
				var o span
				o, j, ok = scanString(b, j)
				ok = ok && !o.esc && string(b[o.off:o.end]) != "error" // vLLM's error shape
			} else {
				j, ok = skipValue(b, j, 1)
			}
		default:
			j, ok = skipValue(b, j, 1)
		}
		if !ok {
			return false
		}
		var more bool
		if i, more, ok = scanNext(b, j, '}'); !ok {
			return false
		}
		if !more {
			return skipWS(b, i) == len(b) // anything after the object is a tail fastjson refuses
		}
	}
}

// scanChoices reads the value of "choices". A value that is not an array holds no choices, and
// elements that are not objects are no choices, as in fold.
func (s *chatScan) scanChoices(b []byte, i int) (int, bool) {
	if b[i] != '[' {
		return skipValue(b, i, 1)
	}
	i, empty := scanOpen(b, i, ']')
	if empty {
		return i, true
	}
	for {
		var ok, more bool
		if i < len(b) && b[i] == '{' {
			if s.nchoices == fastMaxChoices {
				return 0, false
			}
			c := &s.choices[s.nchoices]
			s.nchoices++
			i, ok = s.scanChoice(b, i, c)
		} else {
			i, ok = skipValue(b, i, 2)
		}
		if !ok {
			return 0, false
		}
		if i, more, ok = scanNext(b, i, ']'); !ok || !more {
			return i, ok
		}
	}
}

// scanChoice reads one choice object at b[i] into c.
func (s *chatScan) scanChoice(b []byte, i int, c *fastChoice) (int, bool) {
	*c = fastChoice{tools: uint8(s.ntools)}
	i, empty := scanOpen(b, i, '}')
	if empty {
		return i, true
	}
	var seen uint8
	for {
		key, j, ok := scanKey(b, i)
		if !ok {
			return 0, false
		}
		switch string(key) {
		case "index":
			if !once(&seen, keyA) {
				return 0, false
			}
			if isNumberStart(b[j]) {
				c.idx, j, ok = scanCount(b, j)
			} else {
				c.idx = -1 // count reads a non-number as unknown, which add ignores
				j, ok = skipValue(b, j, 3)
			}
		case "finish_reason":
			if !once(&seen, keyB) {
				return 0, false
			}
			c.finish, j, ok = stringOrSkip(b, j, 3)
		case "text":
			if !once(&seen, keyC) {
				return 0, false
			}
			c.text, j, ok = stringOrSkip(b, j, 3)
		case "delta":
			if !once(&seen, keyD) {
				return 0, false
			}
			if b[j] == '{' {
				j, ok = s.scanDelta(b, j, c)
			} else {
				j, ok = skipValue(b, j, 3)
			}
		case "message":
			return 0, false // a body's shape in a stream: fold decides which of the two it reads
		default:
			j, ok = skipValue(b, j, 3)
		}
		if !ok {
			return 0, false
		}
		var more bool
		if i, more, ok = scanNext(b, j, '}'); !ok || !more {
			return i, ok
		}
	}
}

// scanDelta reads a delta object at b[i] into c.
func (s *chatScan) scanDelta(b []byte, i int, c *fastChoice) (int, bool) {
	i, empty := scanOpen(b, i, '}')
	if empty {
		return i, true
	}
	var seen uint8
	for {
		key, j, ok := scanKey(b, i)
		if !ok {
			return 0, false
		}
		switch string(key) {
		case "content":
			if !once(&seen, keyA) || b[j] == '[' { // content parts go through fold
				return 0, false
			}
			c.content, j, ok = stringOrSkip(b, j, 4)
		case "refusal":
			if !once(&seen, keyB) {
				return 0, false
			}
			c.refusal, j, ok = stringOrSkip(b, j, 4)
		case "reasoning_content":
			if !once(&seen, keyC) {
				return 0, false
			}
			c.reasoning, j, ok = stringOrSkip(b, j, 4)
		case "reasoning":
			if !once(&seen, keyD) {
				return 0, false
			}
			c.reason, j, ok = stringOrSkip(b, j, 4)
		case "tool_calls":
			if !once(&seen, keyE) {
				return 0, false
			}
			if b[j] == '[' {
				j, ok = s.scanTools(b, j, c)
			} else {
				j, ok = skipValue(b, j, 4)
			}
		case "function_call":
			if !once(&seen, keyF) {
				return 0, false
			}
			j, ok = scanFunction(b, j, &c.fn, 4)
		case "reasoning_details":
			// OpenRouter's reasoning parts go through fold; an empty or null one holds none.
			if !isEmptyList(b, j) {
				return 0, false
			}
			j, ok = skipValue(b, j, 4)
		default:
			j, ok = skipValue(b, j, 4)
		}
		if !ok {
			return 0, false
		}
		var more bool
		if i, more, ok = scanNext(b, j, '}'); !ok || !more {
			return i, ok
		}
	}
}

// scanTools reads the tool_calls array at b[i], appending each call's function to s.tools.
func (s *chatScan) scanTools(b []byte, i int, c *fastChoice) (int, bool) {
	i, empty := scanOpen(b, i, ']')
	if empty {
		return i, true
	}
	for {
		var ok, more bool
		if i < len(b) && b[i] == '{' {
			i, ok = s.scanToolCall(b, i, c)
		} else {
			i, ok = skipValue(b, i, 5) // fold finds no function in a non-object
		}
		if !ok {
			return 0, false
		}
		if i, more, ok = scanNext(b, i, ']'); !ok || !more {
			return i, ok
		}
	}
}

// scanToolCall reads one tool call object at b[i].
func (s *chatScan) scanToolCall(b []byte, i int, c *fastChoice) (int, bool) {
	i, empty := scanOpen(b, i, '}')
	if empty {
		return i, true
	}
	var seen uint8
	for {
		key, j, ok := scanKey(b, i)
		if !ok {
			return 0, false
		}
		if string(key) == "function" {
			if !once(&seen, keyA) || s.ntools == fastMaxTools {
				return 0, false
			}
			f := &s.tools[s.ntools]
			*f = fastFunction{}
			s.ntools++
			c.ntools++
			j, ok = scanFunction(b, j, f, 6)
		} else {
			j, ok = skipValue(b, j, 6)
		}
		if !ok {
			return 0, false
		}
		var more bool
		if i, more, ok = scanNext(b, j, '}'); !ok || !more {
			return i, ok
		}
	}
}

// scanFunction reads a function object ({"name": …, "arguments": …}) at b[i] into f; any other
// value is no function, as in fold. Arguments sent as an object are ignored there too.
func scanFunction(b []byte, i int, f *fastFunction, depth int) (int, bool) {
	if b[i] != '{' {
		return skipValue(b, i, depth)
	}
	i, empty := scanOpen(b, i, '}')
	if empty {
		return i, true
	}
	var seen uint8
	for {
		key, j, ok := scanKey(b, i)
		if !ok {
			return 0, false
		}
		switch string(key) {
		case "name":
			if !once(&seen, keyA) {
				return 0, false
			}
			f.name, j, ok = stringOrSkip(b, j, depth+1)
		case "arguments":
			if !once(&seen, keyB) {
				return 0, false
			}
			f.args, j, ok = stringOrSkip(b, j, depth+1)
		default:
			j, ok = skipValue(b, j, depth+1)
		}
		if !ok {
			return 0, false
		}
		var more bool
		if i, more, ok = scanNext(b, j, '}'); !ok || !more {
			return i, ok
		}
	}
}

// scanUsage reads the value of "usage" as openAIUsage would: an object of counts (a null or any
// other value is no usage).
func (s *chatScan) scanUsage(b []byte, i int) (int, bool) {
	if b[i] != '{' {
		return skipValue(b, i, 1)
	}
	u, total := NoUsage, int64(-1)
	i, empty := scanOpen(b, i, '}')
	if !empty {
		var seen uint8
		for {
			key, j, ok := scanKey(b, i)
			if !ok {
				return 0, false
			}
			switch string(key) {
			case "prompt_tokens":
				ok = once(&seen, keyA)
				u.InputTokens, j, ok = countOrSkip(b, j, 2, ok)
			case "completion_tokens":
				ok = once(&seen, keyB)
				u.OutputTokens, j, ok = countOrSkip(b, j, 2, ok)
			case "total_tokens":
				ok = once(&seen, keyC)
				total, j, ok = countOrSkip(b, j, 2, ok)
			case "completion_tokens_details":
				ok = once(&seen, keyD)
				u.ReasoningTokens, j, ok = scanDetail(b, j, "reasoning_tokens", ok)
			case "prompt_tokens_details":
				ok = once(&seen, keyE)
				u.CachedTokens, j, ok = scanDetail(b, j, "cached_tokens", ok)
			default:
				j, ok = skipValue(b, j, 2)
			}
			if !ok {
				return 0, false
			}
			var more bool
			if i, more, ok = scanNext(b, j, '}'); !ok {
				return 0, false
			}
			if !more {
				break
			}
		}
	}
	// The placeholder rule of openAIUsage: an all-zero usage is no usage.
	if u.InputTokens > 0 || u.OutputTokens > 0 || total > 0 {
		s.usage, s.usageOK, s.total = u, true, total
	}
	return i, true
}

// scanDetail reads a usage details object (completion_tokens_details, prompt_tokens_details) and
// returns its count named key; a value that is not an object holds none. ok false refuses at
// once (a repeated key).
func scanDetail(b []byte, i int, key string, ok bool) (int64, int, bool) {
	if !ok {
		return 0, 0, false
	}
	if b[i] != '{' {
		j, ok := skipValue(b, i, 2)
		return -1, j, ok
	}
	n := int64(-1)
	i, empty := scanOpen(b, i, '}')
	if empty {
		return n, i, true
	}
	var seen uint8
	for {
		k, j, ok := scanKey(b, i)
		if !ok {
			return 0, 0, false
		}
		if string(k) == key {
			n, j, ok = countOrSkip(b, j, 3, once(&seen, keyA))
		} else {
			j, ok = skipValue(b, j, 3)
		}
		if !ok {
			return 0, 0, false
		}
		var more bool
		if i, more, ok = scanNext(b, j, '}'); !ok || !more {
			return n, i, ok
		}
	}
}

// countOrSkip reads a token count as count does: a plain integer, or -1 for a value that is not
// a number. ok false refuses at once (a repeated key).
func countOrSkip(b []byte, i, depth int, ok bool) (int64, int, bool) {
	if !ok {
		return 0, 0, false
	}
	if isNumberStart(b[i]) {
		return scanCount(b, i)
	}
	j, ok := skipValue(b, i, depth)
	return -1, j, ok
}

// stringOrSkip reads a string, or steps over any other value, which nonEmptyString reads as no
// string (an empty span).
func stringOrSkip(b []byte, i, depth int) (span, int, bool) {
	if b[i] == '"' {
		return scanString(b, i)
	}
	j, ok := skipValue(b, i, depth)
	return span{}, j, ok
}

// commit folds a scanned chunk into the result in fold's order: model, usage, then choice by
// choice its index, finish reason, content, refusal, tool calls, function_call, reasoning and
// text.
func (d *openAI) commit(b []byte) Kind {
	s := &d.fast
	if !s.model.empty() {
		d.setModel(d.str(b, s.model))
	}
	if s.usageOK {
		d.res.Usage, d.res.HasUsage = reasoningApart(s.usage, s.total), true
	}
	var content, reasoning bool
	for k := range s.nchoices {
		c := &s.choices[k]
		var finish []byte
		if !c.finish.empty() {
			finish = d.str(b, c.finish)
		}
		d.addChoice(c.idx, finish)
		if !c.content.empty() {
			d.text(d.str(b, c.content))
			content = true
		}
		if !c.refusal.empty() {
			d.text(d.str(b, c.refusal))
			d.res.Refusal = true
			content = true
		}
		for t := c.tools; t < c.tools+c.ntools; t++ {
			if d.fastFunction(b, &s.tools[t]) {
				content = true
			}
		}
		if d.fastFunction(b, &c.fn) {
			content = true
		}
		r := c.reasoning
		if r.empty() {
			r = c.reason
		}
		if !r.empty() {
			d.reasoning(d.str(b, r))
			reasoning = true
		}
		if !c.text.empty() {
			d.text(d.str(b, c.text))
			content = true
		}
	}
	return eventKind(&d.res, content, reasoning)
}

// fastFunction folds a scanned function as function does.
func (d *openAI) fastFunction(b []byte, f *fastFunction) bool {
	if !f.name.empty() {
		d.text(d.str(b, f.name))
	}
	if !f.args.empty() {
		d.text(d.str(b, f.args))
	}
	if f.name.empty() && f.args.empty() {
		return false
	}
	d.res.ToolCalls = true
	return true
}

// str returns the decoded bytes of a string of b. A string with escapes is decoded into the
// decoder's scratch buffer, valid until the next call.
func (d *openAI) str(b []byte, s span) []byte {
	if !s.esc {
		return b[s.off:s.end]
	}
	d.scratch = appendUnescaped(d.scratch[:0], b[s.off:s.end])
	return d.scratch
}

// isEmptyList reports whether the value at b[i] is null or an empty array.
func isEmptyList(b []byte, i int) bool {
	if i < len(b) && b[i] == '[' {
		j := skipWS(b, i+1)
		return j < len(b) && b[j] == ']'
	}
	_, ok := scanLiteral(b, i, "null")
	return ok
}
