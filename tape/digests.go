package tape

import "slices"

// An index can have its workers compute, for each message they classify,
// something its user needs of the message's bytes (diff: a call's key from
// its params, an answer's hash), while those bytes are in the cache: the
// user then reads the tape no second time for it. Plain indexing (stats)
// pays one nil check a segment.

// Digest is what a Digester computed of one message: three words of the
// user's choosing, OK false when it computed nothing (the user reads the
// message itself then).
type Digest struct {
	V  [3]uint64
	OK bool
}

// DigestMsg is what a Digester is told of a message: its bytes (as
// Index.Message's Raw), kind, direction and its method's raw JSON string
// (quotes included; nil when it has none), the value of its params
// member as recorded when it has exactly one (nil otherwise), and whether
// it is an error response (a top-level "error" member).
type DigestMsg struct {
	Raw    []byte
	Kind   Kind
	Dir    Dir
	Method []byte
	Params []byte
	Error  bool
}

// A Digester computes a message's Digest. It is called by one goroutine
// at a time; NewDigester gives each worker its own.
type Digester func(m DigestMsg) Digest

// WithDigests makes an Index compute a Digest of each message with a
// Digester of newDigester's (one a classifying worker), read back with
// Index.Digests. Only the parallel classification computes them (a tape
// mapped from a file, more than a few hundred KiB at once); a message
// indexed otherwise has no Digest (OK false).
func WithDigests(newDigester func() Digester) ReaderOption {
	return func(c *readerConfig) { c.digester = newDigester }
}

// Digests is the Digest of each message of an index, by seq.
type Digests struct {
	chunks [][]Digest // of digestChunk each; nil: none in it
	n      int
}

const digestChunkBits = 12

// At is message seq's Digest (OK false when it has none).
func (d Digests) At(seq int) Digest {
	c := seq >> digestChunkBits
	if seq < 0 || seq >= d.n || c >= len(d.chunks) || d.chunks[c] == nil {
		return Digest{}
	}
	return d.chunks[c][seq&(1<<digestChunkBits-1)]
}

// Digests returns the Digest of every message indexed so far (none when
// the index computes none): what it holds does not change.
func (x *Index) Digests() Digests {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return Digests{chunks: slices.Clone(x.digests.chunks), n: x.recs.len()}
}

// digest computes the digests of a classified line's messages msgs into
// dst (one a message).
func digestLine(d Digester, dst []Digest, line []byte, msgs []msgInfo) []Digest {
	for i := range msgs {
		m := &msgs[i]
		var method, params []byte
		if m.method.ok() {
			method = m.method.in(line)
		}
		if m.params.ok() {
			params = m.params.in(line)
		}
		dst = append(dst, d(DigestMsg{Raw: line[m.start:m.end], Kind: m.kind, Dir: dirCodes[m.dirc], Method: method, Params: params, Error: m.isError}))
	}
	return dst
}

// addDigests notes the digests of the messages about to be added (seqs
// from x.recs.len() on), in chunks: no copy as they grow, and no more
// allocated than they hold.
func (x *Index) addDigests(ds []Digest) {
	seq := x.recs.len()
	for _, d := range ds {
		c := seq >> digestChunkBits
		for len(x.digests.chunks) <= c {
			x.digests.chunks = append(x.digests.chunks, nil)
		}
		if x.digests.chunks[c] == nil {
			x.digests.chunks[c] = make([]Digest, 1<<digestChunkBits)
		}
		x.digests.chunks[c][seq&(1<<digestChunkBits-1)] = d
		seq++
	}
}
