package trace

// Blocks returns how many blockSize-token blocks a prompt of tokens tokens spans:
// ceil(tokens/blockSize), the length Mooncake traces give hash_ids.
func Blocks(tokens, blockSize int) int {
	if tokens <= 0 || blockSize <= 0 {
		return 0
	}
	return (tokens + blockSize - 1) / blockSize
}

// HashSynth gives requests without prefix information synthetic hash ids: ceil(input/512)
// fresh ids each, taken from a counter in the order Assign is called. The ids are therefore
// deterministic for a given trace and order, unique to each request (no prefix-cache reuse is
// invented), and dense, as in Mooncake's own traces. Start the counter above every id already
// present when a trace mixes requests with and without ids.
type HashSynth struct {
	next int64
}

// NewHashSynth returns a HashSynth whose first id is first.
func NewHashSynth(first int64) *HashSynth { return &HashSynth{next: first} }

// Assign fills r.HashIDs when it is empty and the request has a prompt; requests that already
// carry ids keep them.
func (s *HashSynth) Assign(r *Request) {
	if len(r.HashIDs) > 0 {
		return
	}
	n := Blocks(r.InputLength, BlockTokens)
	if n == 0 {
		return
	}
	r.HashIDs = make([]int64, n)
	for i := range r.HashIDs {
		r.HashIDs[i] = s.next
		s.next++
	}
}

// SynthesizeMissing gives every request with a prompt and no hash ids synthetic ones (HashSynth,
// in the order of reqs), numbered above every id the requests already carry; it returns how
// many requests it gave ids.
func SynthesizeMissing(reqs []Request) int {
	var maxID int64 = -1
	for _, r := range reqs {
		for _, id := range r.HashIDs {
			maxID = max(maxID, id)
		}
	}
	synth := NewHashSynth(maxID + 1)
	n := 0
	for i := range reqs {
		if len(reqs[i].HashIDs) == 0 && reqs[i].InputLength > 0 {
			synth.Assign(&reqs[i])
			n++
		}
	}
	return n
}
