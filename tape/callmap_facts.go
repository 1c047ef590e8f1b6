package tape

// What ReadCallsMapped reads of the index: each message's entry, size and
// pairing, a range of messages under one read lock instead of Entry, Pair,
// Failure and Negotiation each taking it for each message (two readers
// and the pairing goroutine took the same lock a few times a message).

// msgFacts is, for a request or a response, its entry and size (span),
// its pairing (Pair), its own Failure and, when it has a
// partner, the partner's kind; for another message, its kind alone.
type msgFacts struct {
	e           Entry
	size        int
	pair        Pair
	failure     Failure
	partnerKind Kind
}

// callFacts appends the facts of messages [lo, hi) to dst and returns it.
func (x *Index) callFacts(lo, hi int, dst []msgFacts) []msgFacts {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for i := lo; i < hi; i++ {
		r := x.recs.at(i)
		if r.kind != KindRequest && r.kind != KindResponse {
			dst = append(dst, msgFacts{e: Entry{Kind: r.kind}}) // read no further
			continue
		}
		dst = append(dst, msgFacts{e: x.entry(i), size: int(r.n)})
		f := &dst[len(dst)-1]
		f.pair = x.pairOf(i)
		if r.kind == KindResponse { // Failure(i) of a response
			switch {
			case r.flags&flagNegotiation != 0:
			case r.flags&flagError != 0:
				f.failure = RPCError
			case r.flags&flagToolError != 0:
				f.failure = ToolError
			}
		}
		if f.pair.Partner >= 0 {
			f.partnerKind = x.recs.at(f.pair.Partner).kind
		}
	}
	return dst
}
