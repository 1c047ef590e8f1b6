package tape

import "github.com/tidwall/gjson"

// MetaSkeleton is the _meta member (true) of a record an import made from
// a trace span without the message's body: its method, target, id, status
// and time are the span's, its params and result are not the real ones.
// Readers (stats, open, check, diff) take it as it is; replay refuses a
// tape whose messages are skeletons, since a client would get answers no
// server gave.
const MetaSkeleton = "skeleton"

// Skeleton reports whether the record line is marked _meta.skeleton.
func Skeleton(line []byte) bool {
	m := RecordMeta(line)
	return m != nil && gjson.GetBytes(m, MetaSkeleton).Type == gjson.True
}
