package tape

import (
	"slices"
	"sort"
	"time"
)

// Stats summarizes a tape per server and method.
type Stats struct {
	Messages  int           `json:"messages"`
	Lifecycle int           `json:"lifecycle"`
	Invalid   int           `json:"invalid"`
	Warnings  int           `json:"warnings"`
	Servers   []ServerStats `json:"servers"`
	// Injected counts, per rule, the records an interception rule acted
	// on (AddInjections fills it in); an audit rule's, which only say what
	// it would have done, under "NAME (audit: not done)".
	Injected map[string]int `json:"injected,omitempty"`
	// StartFailures counts the servers the recorder could not start
	// ($transport/start with an error): each is an error of the tape.
	StartFailures int `json:"start_failures,omitempty"`
	// Auth is the OAuth handshake the tape recorded over HTTP (AddAuth
	// fills it in), nil when it recorded none.
	Auth *AuthStats `json:"auth,omitempty"`
}

// ServerStats is one server's share of a tape.
type ServerStats struct {
	Server  string        `json:"server"`
	Total   MethodStats   `json:"total"`
	Methods []MethodStats `json:"methods"`
	// Context is what the server's definitions cost a model's context
	// (AddContextCosts fills it in; ComputeStats reads no bodies).
	Context []ListCost `json:"context,omitempty"`
	// Tasks are the server's tasks, one entry a kind of creating request
	// (AddTaskStats fills it in).
	Tasks []TaskStats `json:"tasks,omitempty"`
}

// MethodStats counts one method's traffic. Dir is the direction of its
// requests or notifications: "send" for the client's, "recv" for the server's.
// Responses no request matched, and invalid lines, are counted apart, in a
// MethodStats whose Bucket says which.
type MethodStats struct {
	Method        string `json:"method,omitempty"`
	Bucket        string `json:"bucket,omitempty"` // BucketOrphans, BucketInvalid, or "" for a method
	Dir           Dir    `json:"dir,omitempty"`
	Requests      int    `json:"requests"`
	Notifications int    `json:"notifications"`
	Responses     int    `json:"responses"`
	Errors        int    `json:"errors"`      // JSON-RPC errors, version negotiation apart
	ToolErrors    int    `json:"tool_errors"` // results with isError: the tool failed
	// Negotiations counts server/discover probes rejected before
	// initialize by a server of an earlier era (Index.Negotiation):
	// version negotiation, not errors.
	Negotiations int          `json:"negotiations"`
	Orphans      int          `json:"orphans"`
	Pending      int          `json:"pending"`
	Cancelled    int          `json:"cancelled"`
	Late         int          `json:"late"`
	Invalid      int          `json:"invalid"`
	Latency      LatencyStats `json:"latency"`
	latencies    []time.Duration
	runs         []int // of a total: the lengths of the sorted runs its latencies are (add)
}

// LatencyStats are percentiles of request-to-response time over the pairs
// whose two timestamps are known.
type LatencyStats struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P95   time.Duration `json:"p95_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

// Buckets of MethodStats that count something other than one method.
const (
	BucketOrphans = "orphan responses"
	BucketInvalid = "invalid lines"
)

// ComputeStats counts the messages of x; with server non-empty, only that
// server's. Orphan responses are counted under the method "" (no request
// names one) and invalid lines under the server their _meta names, if any.
func ComputeStats(x *Index, server string) Stats {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var st Stats
	st.Warnings = x.warnings.n
	st.StartFailures = x.startFailures
	st.Servers = []ServerStats{}
	type key struct {
		server uint16
		method uint32
		dir    uint8
		bucket uint8 // 0 for a method, else 1 + an index into buckets
	}
	buckets := [...]string{BucketInvalid, BucketOrphans}
	const invalid, orphans = 1, 2
	per := map[key]*MethodStats{}
	servers := map[uint16]bool{}
	var lastKey key
	var last *MethodStats
	get := func(k key) *MethodStats {
		if last != nil && k == lastKey { // runs of one method's messages: no hashing
			return last
		}
		m := per[k]
		if m == nil {
			m = &MethodStats{Method: x.methods.names[k.method], Dir: dirCodes[k.dir]}
			if k.bucket > 0 {
				m.Bucket = buckets[k.bucket-1]
			}
			per[k] = m
		}
		lastKey, last = k, m
		return m
	}
	lastServer := -1
	for i := range x.recs.len() {
		r := x.recs.at(i)
		if server != "" && x.servers.names[r.server] != server {
			continue
		}
		st.Messages++
		switch r.kind {
		case KindLifecycle:
			st.Lifecycle++
			continue
		case KindInvalid:
			st.Invalid++
			servers[r.server] = true
			get(key{r.server, 0, r.dir, invalid}).Invalid++
			continue
		}
		if int(r.server) != lastServer {
			servers[r.server] = true
			lastServer = int(r.server)
		}
		switch r.kind {
		case KindRequest:
			m := get(key{r.server, r.method, r.dir, 0})
			m.Requests++
			// As pairOf reads the request's pairing, without making its Pair.
			switch {
			case r.flags&flagCancelled != 0:
				m.Cancelled++
			case r.partner < 0:
				m.Pending++
			case r.flags&flagReordered != 0: // a reordered pair's time says nothing of the server's speed
			default:
				if o := x.recs.at(int(r.partner)); r.ts != noTime && o.ts != noTime {
					m.latencies = append(m.latencies, time.Duration(o.ts-r.ts))
				}
			}
		case KindNotification:
			get(key{r.server, r.method, r.dir, 0}).Notifications++
		case KindResponse:
			reqDir := r.dir
			if reqDir == 1 || reqDir == 2 {
				reqDir = 3 - reqDir
			}
			k := key{r.server, r.method, reqDir, 0}
			if r.partner < 0 {
				k = key{r.server, 0, reqDir, orphans}
			}
			m := get(k)
			m.Responses++
			switch {
			case r.flags&flagNegotiation != 0:
				m.Negotiations++
			case r.flags&flagError != 0:
				m.Errors++
			}
			if r.flags&flagToolError != 0 {
				m.ToolErrors++
			}
			if r.flags&flagOrphan != 0 {
				m.Orphans++
			}
			if r.flags&flagLate != 0 {
				m.Late++
			}
		}
	}
	byServer := map[uint16]*ServerStats{}
	for k, m := range per {
		ss := byServer[k.server]
		if ss == nil {
			ss = &ServerStats{Server: x.servers.names[k.server]}
			byServer[k.server] = ss
		}
		m.Latency = latencyStats(m.latencies)
		ss.Total.add(m)
		ss.Methods = append(ss.Methods, *m)
	}
	for s := range servers {
		ss := byServer[s]
		ss.Total.latencies = mergeRuns(ss.Total.latencies, ss.Total.runs)
		ss.Total.Latency = latencyStats(ss.Total.latencies)
		ss.Total.latencies, ss.Total.runs = nil, nil
		sort.Slice(ss.Methods, func(i, j int) bool {
			a, b := ss.Methods[i], ss.Methods[j]
			if a.Bucket != b.Bucket {
				return a.Bucket < b.Bucket // methods first, then the buckets
			}
			if a.Method != b.Method {
				return a.Method < b.Method
			}
			return a.Dir < b.Dir
		})
		for i := range ss.Methods {
			ss.Methods[i].latencies = nil
		}
		st.Servers = append(st.Servers, *ss)
	}
	sort.Slice(st.Servers, func(i, j int) bool { return st.Servers[i].Server < st.Servers[j].Server })
	return st
}

func (t *MethodStats) add(m *MethodStats) {
	t.Requests += m.Requests
	t.Notifications += m.Notifications
	t.Responses += m.Responses
	t.Errors += m.Errors
	t.ToolErrors += m.ToolErrors
	t.Negotiations += m.Negotiations
	t.Orphans += m.Orphans
	t.Pending += m.Pending
	t.Cancelled += m.Cancelled
	t.Late += m.Late
	t.Invalid += m.Invalid
	t.latencies = append(t.latencies, m.latencies...)
	t.runs = append(t.runs, len(m.latencies)) // sorted already, by latencyStats
}

// mergeRuns sorts ls, made of runs of the lengths given, each sorted, by
// merging them pairwise (n log(runs) instead of sorting it all again).
func mergeRuns(ls []time.Duration, runs []int) []time.Duration {
	if len(runs) < 2 {
		return ls
	}
	buf := make([]time.Duration, len(ls))
	for len(runs) > 1 {
		var next []int
		at := 0
		for i := 0; i < len(runs); i += 2 {
			if i+1 == len(runs) {
				copy(buf[at:], ls[at:at+runs[i]])
				next = append(next, runs[i])
				break
			}
			a, b := ls[at:at+runs[i]], ls[at+runs[i]:at+runs[i]+runs[i+1]]
			out := buf[at : at : at+len(a)+len(b)]
			for len(a) > 0 && len(b) > 0 {
				if b[0] < a[0] {
					out, b = append(out, b[0]), b[1:]
				} else {
					out, a = append(out, a[0]), a[1:]
				}
			}
			out = append(append(out, a...), b...)
			at += len(out)
			next = append(next, len(out))
		}
		ls, buf, runs = buf, ls, next
	}
	return ls
}

func latencyStats(ls []time.Duration) LatencyStats {
	if len(ls) == 0 {
		return LatencyStats{}
	}
	slices.Sort(ls)
	pct := func(p float64) time.Duration {
		i := int(p*float64(len(ls))+0.5) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(ls) {
			i = len(ls) - 1
		}
		return ls[i]
	}
	return LatencyStats{Count: len(ls), P50: pct(0.50), P95: pct(0.95), P99: pct(0.99), Max: ls[len(ls)-1]}
}
