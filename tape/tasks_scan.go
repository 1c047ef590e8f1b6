package tape

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// What Tasks reads, and how: the index says which messages are about tasks
// (their methods, kinds, pairs), and of their bodies only the few fields a
// Task needs are read (taskBody), from lines fetched a block at a time
// (blockReader), as encoding/json would read them into
// {params: {taskId, status}, result: {taskId, status, task: {taskId,
// status}}}: the same keys (matched case-insensitively, the last one
// winning), the same type errors, the same verdict on invalid JSON
// (validBody). TestTasksAgree holds Tasks to the encoding/json reading it
// replaced.

// taskMethod is one of the methods of a message Tasks reads.
type taskMethod uint8

const (
	taskGet taskMethod = iota
	taskResult
	taskCancel
	taskNote
)

var taskMethodNames = [...]string{"tasks/get", "tasks/result", "tasks/cancel", "notifications/tasks/status"}

// taskMsg is a request or notification of a tasks method, with what Tasks
// needs of its answer.
type taskMsg struct {
	seq, partner           int
	method                 taskMethod
	kind                   Kind
	dir                    Dir
	server                 string
	time, ansTime          time.Time
	ansError, ansToolError bool
}

// taskScan reads the messages of one index for Tasks.
type taskScan struct {
	x  *Index
	n  int // messages indexed when the scan began
	rd blockReader
	c  classifier
}

func newTaskScan(x *Index) *taskScan {
	return &taskScan{x: x, n: x.Len(), rd: blockReader{src: x.src}}
}

// recTime is a record's time as Entry gives it.
func recTime(ts int64) time.Time {
	if ts == noTime {
		return time.Time{}
	}
	return time.Unix(0, ts).UTC()
}

// messages returns the requests and notifications of the tasks methods,
// in order, read from the index under one lock.
func (s *taskScan) messages() []taskMsg {
	x := s.x
	x.mu.RLock()
	defer x.mu.RUnlock()
	var ids [len(taskMethodNames)]uint32
	var any bool
	for m, name := range taskMethodNames {
		id, ok := x.methods.index[name]
		if ok && id != 0 {
			ids[m], any = id, true
		}
	}
	if !any {
		return nil
	}
	var out []taskMsg
	for i := range s.n {
		r := x.recs.at(i)
		if r.method == 0 || r.kind != KindRequest && r.kind != KindNotification {
			continue
		}
		m := taskMethod(0)
		for m < taskMethod(len(ids)) && ids[m] != r.method {
			m++
		}
		if m == taskMethod(len(ids)) {
			continue
		}
		en := taskMsg{seq: i, partner: int(r.partner), method: m, kind: r.kind, dir: dirCodes[r.dir],
			server: x.servers.names[r.server], time: recTime(r.ts)}
		if en.partner >= 0 {
			a := x.recs.at(en.partner)
			en.ansError, en.ansToolError, en.ansTime = a.flags&flagError != 0, a.flags&flagToolError != 0, recTime(a.ts)
		}
		out = append(out, en)
	}
	return out
}

// mayCreate reports whether message i may be the answer that created a
// task of server run by runner: a response of the runner's, not an error.
func (s *taskScan) mayCreate(i int, server string, runner Dir) bool {
	x := s.x
	x.mu.RLock()
	defer x.mu.RUnlock()
	r := x.recs.at(i)
	return r.kind == KindResponse && r.flags&flagError == 0 && dirCodes[r.dir] == runner && x.servers.names[r.server] == server
}

// creator returns the request answered by message i and its time.
func (s *taskScan) creator(i int) (int, time.Time) {
	x := s.x
	x.mu.RLock()
	defer x.mu.RUnlock()
	p := int(x.recs.at(i).partner)
	if p < 0 {
		return p, time.Time{}
	}
	return p, recTime(x.recs.at(p).ts)
}

// body reads message i's task fields as encoding/json read them from its
// body without the tape's _meta: false when it cannot be read, is not
// valid JSON, or a field has a type encoding/json would not decode. Its
// raw bytes last until the next body read.
func (s *taskScan) body(i int) (taskBody, bool) {
	raw, err := s.raw(i)
	if err != nil {
		return taskBody{}, false
	}
	return s.parse(raw)
}

// raw returns message i's bytes, valid until the next read.
func (s *taskScan) raw(i int) ([]byte, error) {
	x := s.x
	x.mu.RLock()
	r := x.recs.at(i)
	off, n := r.off, int(r.n)
	x.mu.RUnlock()
	return s.rd.at(off, n)
}

// parse reads the task fields of message raw: see body.
func (s *taskScan) parse(raw []byte) (taskBody, bool) {
	if f, valid, ok := readTaskBody(raw); valid {
		return f, ok
	}
	// Not JSON as it stands: encoding/json read it without the tape's
	// _meta, which may have been what was wrong.
	f, ok := s.c.taskBody(raw)
	return f, ok && validBody(raw)
}

// taskBody is what Tasks reads of a message about a task: the spans of
// params.taskId and params.status, of result.taskId and result.status, and
// of result.task's (string values only; a null leaves a field as it was).
type taskBody struct {
	raw                    []byte
	paramsID, paramsStatus span
	resultID, resultStatus span
	task                   bool // result.task is an object
	taskID, taskStatus     span
}

func (s span) len() int { return s.end - s.start }

// taskKey reports whether the member name key (quotes removed, escapes
// not) names field: as encoding/json matches, exactly or case-folded.
func taskKey(key []byte, field string) bool {
	if len(key) == len(field) && string(key) == field {
		return true
	}
	if len(key) < len(field) {
		return false // folding makes no ASCII letter shorter
	}
	if len(key) > len(field) && plainASCII(key) {
		return false // and an ASCII letter folds only to one
	}
	if bytes.IndexByte(key, '\\') < 0 {
		return bytes.EqualFold(key, []byte(field))
	}
	var k string
	if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k) != nil {
		return false
	}
	return k == field || bytes.EqualFold([]byte(k), []byte(field))
}

// plainASCII reports whether b has neither an escape nor a byte past ASCII.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

// taskBody reads the task fields of the message b (a JSON object the
// index classified) as encoding/json reads them into a struct: false when
// one of them holds a type it would not decode (params a string, a taskId
// a number, ...). It does not check the rest of b: see validBody.
func (c *classifier) taskBody(b []byte) (taskBody, bool) {
	f := taskBody{raw: b}
	bad := false
	str := func(dst *span, v span) {
		switch b[v.start] {
		case '"':
			*dst = v
		case 'n': // null: the field keeps its value
		default:
			bad = true
		}
	}
	object := func(v span, fn func(key []byte, v span)) {
		switch b[v.start] {
		case '{':
			if _, err := c.members(b, v.start, fn); err != nil {
				bad = true
			}
		case 'n':
		default:
			bad = true
		}
	}
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return f, false
	}
	_, err := c.members(b, i, func(key []byte, v span) {
		switch {
		case taskKey(key, "params"):
			object(v, func(key []byte, v span) {
				switch {
				case taskKey(key, "taskId"):
					str(&f.paramsID, v)
				case taskKey(key, "status"):
					str(&f.paramsStatus, v)
				}
			})
		case taskKey(key, "result"):
			object(v, func(key []byte, v span) {
				switch {
				case taskKey(key, "taskId"):
					str(&f.resultID, v)
				case taskKey(key, "status"):
					str(&f.resultStatus, v)
				case taskKey(key, "task"):
					switch b[v.start] {
					case 'n': // a null pointer: a later object starts afresh
						f.task, f.taskID, f.taskStatus = false, span{}, span{}
						return
					case '{':
						f.task = true
					}
					object(v, func(key []byte, v span) {
						switch {
						case taskKey(key, "taskId"):
							str(&f.taskID, v)
						case taskKey(key, "status"):
							str(&f.taskStatus, v)
						}
					})
				}
			})
		}
	})
	if err != nil || bad {
		return f, false
	}
	return f, true
}

// taskString returns the string value at s decoded as encoding/json
// decodes it, without a copy when it has no escape and is valid UTF-8.
func taskString(b []byte, s span) []byte {
	raw := b[s.start+1 : s.end-1]
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		return []byte(stringValue(b, s))
	}
	return raw
}

// decodeString returns the string value at s as encoding/json decodes it.
func decodeString(b []byte, s span) string { return stringValue(b, s) }

// validBody reports whether encoding/json decodes message b once its
// tape's _meta is stripped (as Tasks read it before): whether it, or
// that, is valid JSON.
func validBody(b []byte) bool {
	if jsonscan.Valid(b) {
		return true
	}
	if s := StripMeta(b); len(s) != len(b) {
		return jsonscan.Valid(s)
	}
	return false
}

// The objects readTaskBody reads, and the fields it reads of them.
const (
	fieldNone = iota
	fieldParams
	fieldResult
	fieldTask
	fieldTaskID
	fieldStatus
)

// taskField says which field of taskRead the member name key (quotes
// removed) of an object at level names.
func taskField(level int, key []byte) int {
	switch level {
	case fieldNone: // the message
		switch {
		case taskKey(key, "params"):
			return fieldParams
		case taskKey(key, "result"):
			return fieldResult
		}
	case fieldParams, fieldResult, fieldTask:
		switch {
		case taskKey(key, "taskId"):
			return fieldTaskID
		case taskKey(key, "status"):
			return fieldStatus
		case level == fieldResult && taskKey(key, "task"):
			return fieldTask
		}
	}
	return fieldNone
}

// readTaskBody reads the task fields of message b and checks it is valid
// JSON, in one pass: valid says whether b is (as json.Valid says), and ok
// whether encoding/json would decode its fields (no type error).
func readTaskBody(b []byte) (f taskBody, valid, ok bool) {
	f.raw = b
	ok = true
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return f, false, false
	}
	i = f.object(b, i, fieldNone, &ok)
	return f, i >= 0 && skipWS(b, i) == len(b), ok
}

// object reads the object at b[i] == '{' of the given level (fieldNone for
// the message), returning the index after it or -1 when it is not valid.
func (f *taskBody) object(b []byte, i, level int, ok *bool) int {
	depth := 1
	switch level {
	case fieldParams, fieldResult:
		depth = 2
	case fieldTask:
		depth = 3
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		kend := jsonscan.StringEnd(b, i)
		if kend < 0 {
			return -1
		}
		field := taskField(level, b[i+1:kend-1])
		i = skipWS(b, kend)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		i = skipWS(b, i+1)
		if i >= len(b) {
			return -1
		}
		v := i
		switch c := b[i]; {
		case field == fieldNone:
			i = jsonscan.ValueEnd(b, i, depth)
		case field == fieldTaskID || field == fieldStatus:
			i = jsonscan.ValueEnd(b, i, depth)
			if i < 0 {
				return -1
			}
			switch c {
			case '"':
				f.set(level, field, span{v, i})
			case 'n':
			default:
				*ok = false
			}
		case c == '{':
			if field == fieldTask {
				f.task = true
			}
			i = f.object(b, i, field, ok)
		default:
			i = jsonscan.ValueEnd(b, i, depth)
			switch {
			case c != 'n':
				*ok = false
			case field == fieldTask: // a null pointer: a later object starts afresh
				f.task, f.taskID, f.taskStatus = false, span{}, span{}
			}
		}
		if i < 0 {
			return -1
		}
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1
		}
		return -1
	}
}

// set records the string value at v as field of the object at level.
func (f *taskBody) set(level, field int, v span) {
	switch {
	case level == fieldParams && field == fieldTaskID:
		f.paramsID = v
	case level == fieldParams:
		f.paramsStatus = v
	case level == fieldResult && field == fieldTaskID:
		f.resultID = v
	case level == fieldResult:
		f.resultStatus = v
	case field == fieldTaskID:
		f.taskID = v
	default:
		f.taskStatus = v
	}
}

// blockReader reads spans of a tape a block at a time, keeping the last
// few blocks: Tasks reads the lines about tasks mostly in order, a few
// back, and a poll's answer is seldom far from it.
type blockReader struct {
	src    io.ReaderAt
	blocks [4]block
	clock  uint64
	big    []byte
}

type block struct {
	off  int64
	data []byte // the bytes read (fewer than readBlock at the end)
	used uint64
}

const readBlock = 256 << 10

// at returns the n bytes at off, valid until the next call.
func (r *blockReader) at(off int64, n int) ([]byte, error) {
	base := off &^ (readBlock - 1)
	if off+int64(n) > base+readBlock {
		return r.direct(off, n)
	}
	r.clock++
	var b *block
	for k := range r.blocks {
		c := &r.blocks[k]
		if c.data != nil && c.off == base {
			b = c
			break
		}
		if b == nil || c.data == nil || b.data != nil && c.used < b.used {
			b = c
		}
	}
	if b.data == nil || b.off != base {
		buf := b.data[:cap(b.data)]
		if buf == nil {
			buf = make([]byte, readBlock)
		}
		k, err := r.src.ReadAt(buf, base)
		if err != nil && !errors.Is(err, io.EOF) {
			b.data = nil
			return nil, err
		}
		b.off, b.data = base, buf[:k]
	}
	b.used = r.clock
	start := int(off - base)
	if start+n > len(b.data) { // past the bytes there were: read them
		return r.direct(off, n)
	}
	return b.data[start : start+n], nil
}

func (r *blockReader) direct(off int64, n int) ([]byte, error) {
	if cap(r.big) < n {
		r.big = make([]byte, n)
	}
	buf := r.big[:n]
	if k, err := r.src.ReadAt(buf, off); err != nil && !(errors.Is(err, io.EOF) && k == n) {
		return nil, err
	}
	return buf, nil
}
