package compare

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"io"
	"math/bits"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/tape"
)

// Keys are the seeds and normalization of calls' keys and answers' hashes
// shared by the sides of one comparison. Given to OpenSideKeyed, they let
// the tape's index compute each call's key and each answer's hash in its
// own pass over the bytes (tape.WithDigests), while they are in the cache,
// so that Compare reads the tape no second time for them; a message the
// index did not digest is read and hashed by Compare as before.
//
// The first side indexed also leaves a table of its calls' keys by a hash
// of their method and params as recorded: a call of a later side whose
// params are the same bytes takes its key from there, with no canonical
// scan (two recordings of one session mostly repeat their calls' bytes).
type Keys struct {
	seeds  [2]maphash.Seed
	raw    [2]maphash.Seed // of the method and the params as recorded (memo's keys)
	ignore []tape.Path

	mu   sync.Mutex
	memo map[uint64][2]uint64 // raw hash → key, of the first side indexed
}

// NewKeys returns keys for a comparison with options o (its Ignore paths
// are part of a call's key).
func NewKeys(o Options) *Keys {
	return &Keys{
		seeds:  [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		raw:    [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		ignore: slices.Clone(o.Ignore),
	}
}

// fits reports whether k are the keys of a comparison with options o.
func (k *Keys) fits(o Options) bool {
	return k != nil && slices.EqualFunc(k.ignore, o.Ignore, func(a, b tape.Path) bool { return slices.Equal(a, b) })
}

// memoEntry is a call's key by the hash of its method and params as
// recorded.
type memoEntry struct {
	raw uint64
	key [2]uint64
}

// collector gathers the memo entries of one index's workers.
type collector struct {
	mu    sync.Mutex
	lists []*[][]memoEntry // a worker's, in chunks (no copy as they grow)
}

const memoChunk = 4096

func (c *collector) list() *[][]memoEntry {
	l := new([][]memoEntry)
	c.mu.Lock()
	c.lists = append(c.lists, l)
	c.mu.Unlock()
	return l
}

// table is the memo of the collected entries (called when the index's
// workers are done).
func (c *collector) table() map[uint64][2]uint64 {
	n := 0
	for _, l := range c.lists {
		for _, ch := range *l {
			n += len(ch)
		}
	}
	m := make(map[uint64][2]uint64, n)
	for _, l := range c.lists {
		for _, ch := range *l {
			for _, e := range ch {
				m[e.raw] = e.key
			}
		}
	}
	return m
}

// digester gives an index's worker what calls computes of a message: for
// a request sent, its key (method and canonical params) in V[0] and V[1]
// (taken from memo when its params' bytes are there; else computed, and
// noted in col when not nil); for a response received, its answer's hash
// (answerHash) in V[2] and its error code (errorCode; 0 without an error
// member) in V[1].
func (k *Keys) digester(memo map[uint64][2]uint64, col *collector) tape.Digester {
	n := &tape.Normalizer{Ignore: k.ignore}
	cs := canonScan{digest: &digester{seed: k.seeds[1]}}
	var canon []byte
	var list *[][]memoEntry
	if col != nil {
		list = col.list()
	}
	return func(m tape.DigestMsg) tape.Digest {
		switch {
		case m.Kind == tape.KindRequest && m.Dir == tape.DirSend:
			// The method as the index's Entry has it: its JSON string's
			// content, when it holds no escape and is valid UTF-8.
			if len(m.Method) < 2 || bytes.IndexByte(m.Method, '\\') >= 0 || !utf8.Valid(m.Method) {
				return tape.Digest{}
			}
			method := m.Method[1 : len(m.Method)-1]
			var raw uint64
			if m.Params != nil {
				raw = maphash.Bytes(k.raw[0], m.Params) ^ bits.RotateLeft64(maphash.Bytes(k.raw[1], method), 29)
				if v, ok := memo[raw]; ok {
					return tape.Digest{V: [3]uint64{v[0], v[1]}, OK: true}
				}
			}
			canon = append(append(canon[:0], method...), 0)
			if b, end, ok := cs.paramsAt(canon, m.Params, 0, n); ok && end == len(m.Params) {
				// The params' value as the index found it: paramsKey
				// would find the same one (the only params member) again.
				canon = b
			} else {
				canon = paramsKey(&cs, canon[:len(method)+1], m.Raw, n)
			}
			key := [2]uint64{maphash.Bytes(k.seeds[0], canon), maphash.Bytes(k.seeds[1], canon)}
			if list != nil && m.Params != nil {
				l := *list
				if len(l) == 0 || len(l[len(l)-1]) == memoChunk {
					l = append(l, make([]memoEntry, 0, memoChunk))
				}
				l[len(l)-1] = append(l[len(l)-1], memoEntry{raw: raw, key: key})
				*list = l
			}
			return tape.Digest{V: [3]uint64{key[0], key[1]}, OK: true}
		case m.Kind == tape.KindResponse && m.Dir == tape.DirRecv:
			var code int32
			if m.Error {
				code = errorCode(m.Raw)
			}
			return tape.Digest{V: [3]uint64{1: uint64(uint32(code)), 2: answerHash(k.seeds[0], m.Raw)}, OK: true}
		}
		return tape.Digest{}
	}
}

// OpenSideKeyed indexes the tape at path for Compare, as OpenSide does,
// its calls' keys and answers' hashes computed by the index with k.
func OpenSideKeyed(path string, k *Keys) (Side, error) {
	k.mu.Lock()
	memo := k.memo
	k.mu.Unlock()
	var col *collector
	if memo == nil {
		col = &collector{}
	}
	x, err := tape.OpenIndex(path, tape.WithDigests(func() tape.Digester { return k.digester(memo, col) }))
	if err != nil {
		return Side{}, err
	}
	if col != nil {
		k.mu.Lock()
		if k.memo == nil {
			k.memo = col.table()
		}
		k.mu.Unlock()
	}
	return Side{Name: path, Index: x, Open: func() (io.ReadCloser, error) { return tape.ReopenIndexed(x, path) }, keys: k}, nil
}

// putKey sets c's key from a digest's two words.
func putKey(c *call, v [3]uint64) {
	binary.LittleEndian.PutUint64(c.key[:8], v[0])
	binary.LittleEndian.PutUint64(c.key[8:], v[1])
}

// answerDigest sets c's answer hash, and its error code when it counts,
// from its answer's digest (as answerOf does from the answer's bytes).
func answerDigest(c *call, d tape.Digest) {
	c.answer = d.V[2]
	if c.needCode {
		c.code = int32(uint32(d.V[1]))
	}
}
