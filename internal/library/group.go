package library

// Groups: the index keeps a tape's messages in groups of up to groupSize
// consecutive ones, not a row each. A group is one row of groups (its id
// is the tape's id shifted left 32 bits plus the seq of its first message,
// so a tape's groups are one id range) whose facts BLOB holds, per
// message, what a search filters on (kind, method, target, status, time)
// and where the message is in the tape; and one row of the FTS5 table
// text, same rowid, whose column mK holds the text of the group's K-th
// message. A search finds the candidate groups with one MATCH over all
// columns, then the messages themselves with the same MATCH limited to
// one column ({mK} : (...)): the query language and its results stay
// FTS5's, a message's, while SQLite writes a few rows per groupSize
// messages instead of three per message.

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/tapedeck/tapedeck/tape"
)

// groupSize is the most messages a group holds: the text table has a
// column each.
const groupSize = 64

var (
	textColumns = func() string {
		cols := make([]string, groupSize)
		for i := range cols {
			cols[i] = fmt.Sprintf("m%d", i)
		}
		return strings.Join(cols, ", ")
	}()
	textInsert = "INSERT INTO text(rowid, " + textColumns + ") VALUES (?" + strings.Repeat(", ?", groupSize) + ")"
)

const factsFormat = 1

var errFacts = fmt.Errorf("a group's facts are damaged: %w", errCorruptIndex)

// encodeFacts encodes rows (consecutive seqs) as a group's facts: a
// format byte, the group's distinct methods and targets, then per message
// its kind (bit 7: it has a time), status, method and target (indexes in
// the strings), time (a delta from the previous one), offset (a delta
// from the end of the previous message) and length.
func encodeFacts(b []byte, rows []row) []byte {
	b = append(b, factsFormat)
	var strs []string
	index := func(s string) int {
		for i, x := range strs {
			if x == s {
				return i
			}
		}
		strs = append(strs, s)
		return len(strs) - 1
	}
	idx := make([]int, 0, 2*len(rows))
	for i := range rows {
		idx = append(idx, index(rows[i].method), index(rows[i].target))
	}
	b = binary.AppendUvarint(b, uint64(len(strs)))
	for _, s := range strs {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	var ts, end int64
	for i := range rows {
		r := &rows[i]
		k := byte(r.kind) & 0x7f
		if r.ts != 0 {
			k |= 0x80
		}
		b = append(b, k, statusCode(r.status))
		b = binary.AppendUvarint(b, uint64(idx[2*i]))
		b = binary.AppendUvarint(b, uint64(idx[2*i+1]))
		if r.ts != 0 {
			b = binary.AppendVarint(b, r.ts-ts)
			ts = r.ts
		}
		b = binary.AppendVarint(b, r.off-end)
		b = binary.AppendUvarint(b, uint64(r.n))
		end = r.off + int64(r.n)
	}
	return b
}

func statusCode(s string) byte {
	for i, x := range statusCodes {
		if x == s {
			return byte(i)
		}
	}
	return 0
}

// decodeFacts decodes a group's facts; first is the seq of its first
// message.
func decodeFacts(b []byte, first int) ([]row, error) {
	if len(b) == 0 || b[0] != factsFormat {
		return nil, errFacts
	}
	b = b[1:]
	uv := func() (uint64, bool) {
		x, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return x, true
	}
	sv := func() (int64, bool) {
		x, k := binary.Varint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return x, true
	}
	n, ok := uv()
	if !ok || n > uint64(len(b)) {
		return nil, errFacts
	}
	strs := make([]string, n)
	for i := range strs {
		l, ok := uv()
		if !ok || l > uint64(len(b)) {
			return nil, errFacts
		}
		strs[i], b = string(b[:l]), b[l:]
	}
	rows := make([]row, 0, groupSize)
	var ts, end int64
	for len(b) > 0 {
		if len(b) < 2 || int(b[1]) >= len(statusCodes) {
			return nil, errFacts
		}
		r := row{seq: first + len(rows), kind: tape.Kind(b[0] & 0x7f), status: statusCodes[b[1]]}
		hasTS := b[0]&0x80 != 0
		b = b[2:]
		m, ok1 := uv()
		t, ok2 := uv()
		if !ok1 || !ok2 || m >= uint64(len(strs)) || t >= uint64(len(strs)) {
			return nil, errFacts
		}
		r.method, r.target = strs[m], strs[t]
		if hasTS {
			d, ok := sv()
			if !ok {
				return nil, errFacts
			}
			ts += d
			r.ts = ts
		}
		d, ok1 := sv()
		l, ok2 := uv()
		if !ok1 || !ok2 {
			return nil, errFacts
		}
		r.off, r.n = end+d, int(l)
		end = r.off + int64(r.n)
		rows = append(rows, r)
	}
	return rows, nil
}
