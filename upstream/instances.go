package upstream

// Verifying several instances at once (verify --instances): the tape's
// client side is sent to each instance on its own connection, at the same
// time, by one Verify each; then each call's answers are compared with one
// another by the same normalization, so the report says both how each
// instance differs from the tape and which instances disagree among
// themselves, on what.

import (
	"context"
	"fmt"
	"sync"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// Instance is one live server verify --instances drives.
type Instance struct {
	Name string // how the report names it (its URL)
	Conn Conn
}

// InstancesReport is what VerifyInstances found.
type InstancesReport struct {
	Server    string
	Instances []string
	// Reports are each instance's verdicts against the tape, in the order
	// of Instances; Errs each run's error (a transport failure), or nil.
	Reports []VerifyReport
	Errs    []error
	// Splits are the calls on which the instances did not all answer
	// alike, in recorded order.
	Splits []Split
}

// Split is one call the instances answered differently: Groups are the
// instances (indexes into Instances) that answered alike, the largest
// group first, and Diffs[k] is how group k+1's answer differs from the
// first group's.
type Split struct {
	Seq, Line    int
	Method, Name string
	Groups       [][]int
	Diffs        [][]replay.DiffOp
}

// Err returns nil when every instance answered every call as the tape
// does, else an error wrapping replay.ErrDiverged that counts them.
func (r *InstancesReport) Err() error {
	bad := 0
	for k := range r.Reports {
		if r.Errs[k] != nil || r.Reports[k].Err() != nil {
			bad++
		}
	}
	if bad == 0 && len(r.Splits) == 0 {
		return nil
	}
	return fmt.Errorf("%w: server '%s': %d of %d instances answered differently from the tape, %d calls split the instances", replay.ErrDiverged, r.Server, bad, len(r.Instances), len(r.Splits))
}

// VerifyInstances runs Verify against each instance at once and compares
// their answers call by call (opts as for Verify; opts.Ignore applies to
// both comparisons).
func VerifyInstances(ctx context.Context, x *tape.Index, instances []Instance, opts VerifyOptions) (InstancesReport, error) {
	server, err := replay.PickServer(x, opts.Server)
	if err != nil {
		return InstancesReport{}, err
	}
	if err := checkRequests(x, server); err != nil {
		return InstancesReport{Server: server}, err
	}
	rep := InstancesReport{Server: server, Reports: make([]VerifyReport, len(instances)), Errs: make([]error, len(instances))}
	var wg sync.WaitGroup
	for k, in := range instances {
		rep.Instances = append(rep.Instances, in.Name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Reports[k], rep.Errs[k] = Verify(ctx, x, in.Conn, opts, nil)
		}()
	}
	wg.Wait()
	rep.Splits = splits(rep.Reports, tape.Normalizer{Ignore: opts.Ignore})
	return rep, nil
}

// splits compares the instances' answers to each call the runs share.
func splits(reports []VerifyReport, norm tape.Normalizer) []Split {
	if len(reports) < 2 {
		return nil
	}
	n := len(reports[0].Calls)
	for _, r := range reports[1:] {
		n = min(n, len(r.Calls))
	}
	var out []Split
	for c := range n {
		first := reports[0].Calls[c]
		if first.Negotiation != "" {
			continue // rejected or answered, either is version negotiation
		}
		var answers []any  // one normalized answer a group
		var groups [][]int // instances by answer
		for k, r := range reports {
			a := any(nil)
			if raw := r.Calls[c].Answer; raw != nil {
				if v, err := norm.Normalize(raw); err == nil {
					a = v
				} else {
					a = "undecodable: " + err.Error()
				}
			} else {
				a = "no answer: " + r.Calls[c].Problem
			}
			placed := false
			for g := range groups {
				if len(replay.Diff(answers[g], a)) == 0 {
					groups[g] = append(groups[g], k)
					placed = true
					break
				}
			}
			if !placed {
				answers, groups = append(answers, a), append(groups, []int{k})
			}
		}
		if len(groups) == 1 {
			continue
		}
		// The majority first: it is what "the others" disagree with.
		for g := 1; g < len(groups); g++ {
			for h := g; h > 0 && len(groups[h]) > len(groups[h-1]); h-- {
				groups[h], groups[h-1] = groups[h-1], groups[h]
				answers[h], answers[h-1] = answers[h-1], answers[h]
			}
		}
		s := Split{Seq: first.Seq, Line: first.Line, Method: first.Method, Name: first.Name, Groups: groups}
		for g := 1; g < len(groups); g++ {
			s.Diffs = append(s.Diffs, replay.Diff(answers[0], answers[g]))
		}
		out = append(out, s)
	}
	return out
}
