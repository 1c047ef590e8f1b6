package tape

// Brief is what Briefs reads of one message: the facts a pass over every
// message needs (a comparison's), many messages under one lock and with
// no time.Time made, where Entry, Pair, Failure and MethodOf take the
// lock a message each.
type Brief struct {
	Server string
	// Method is MethodOf's: a response's is its request's.
	Method string
	// Time is the message's time in Unix nanoseconds, when Timed.
	Time    int64
	Timed   bool
	Partner int // Pair's: the paired message, or -1
	Kind    Kind
	Dir     Dir
	// Cancelled and Late are Pair's; Negotiation is Negotiation's.
	Cancelled, Late, Negotiation bool
	// Failure is how the message failed as a response (NoFailure for
	// any other message; Failure(i) of a request is its answer's).
	Failure Failure
}

// Briefs fills dst (up to its capacity) with the Briefs of the messages
// from seq from on, in order, and returns it: shorter when the index
// holds fewer.
func (x *Index) Briefs(from int, dst []Brief) []Brief {
	x.mu.RLock()
	defer x.mu.RUnlock()
	dst = dst[:0]
	for i := from; i < x.recs.len() && len(dst) < cap(dst); i++ {
		dst = append(dst, x.brief(i))
	}
	return dst
}

// Brief is message i's Brief.
func (x *Index) Brief(i int) Brief {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.brief(i)
}

func (x *Index) brief(i int) Brief {
	r := x.recs.at(i)
	return Brief{
		Server:      x.servers.names[r.server],
		Method:      x.methods.names[r.method],
		Time:        r.ts,
		Timed:       r.ts != noTime,
		Partner:     int(r.partner),
		Kind:        r.kind,
		Dir:         dirCodes[r.dir],
		Cancelled:   r.flags&flagCancelled != 0,
		Late:        r.flags&flagLate != 0,
		Negotiation: r.flags&flagNegotiation != 0,
		Failure:     failureOf(r),
	}
}
