package tape

import (
	"encoding/json"
	"fmt"

	"github.com/wI2L/jsondiff"
)

// DiffOp is one difference between an expected and an actual JSON value.
// Path is a JSON pointer into the compared message ("/params/arguments/a");
// Expected or Actual is absent when the member exists on one side only.
type DiffOp struct {
	Op       string `json:"op"` // "replace", "add" (only in actual) or "remove" (only in expected)
	Path     string `json:"path"`
	Expected any    `json:"expected,omitempty"`
	Actual   any    `json:"actual,omitempty"`
}

func (d DiffOp) String() string {
	switch d.Op {
	case "add":
		return fmt.Sprintf("%s: unexpected %s", d.Path, d.ActualJSON())
	case "remove":
		return fmt.Sprintf("%s: missing, expected %s", d.Path, d.ExpectedJSON())
	}
	return fmt.Sprintf("%s: expected %s, got %s", d.Path, d.ExpectedJSON(), d.ActualJSON())
}

// ExpectedJSON and ActualJSON write the two sides of the change as compact
// JSON, for people.
func (d DiffOp) ExpectedJSON() string { return compactJSON(d.Expected) }

// ActualJSON: see ExpectedJSON.
func (d DiffOp) ActualJSON() string { return compactJSON(d.Actual) }

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Diff compares two normalized JSON values (from tape.Normalizer) and
// returns their differences, expected to actual. It uses wI2L/jsondiff, an
// RFC 6902 differ, and keeps the old value of each change.
func Diff(expected, actual any) []DiffOp {
	ej, err1 := CanonicalValue(expected)
	aj, err2 := CanonicalValue(actual)
	if err1 != nil || err2 != nil {
		return []DiffOp{{Op: "replace", Path: "", Expected: expected, Actual: actual}}
	}
	patch, err := jsondiff.CompareJSON(ej, aj)
	if err != nil {
		return []DiffOp{{Op: "replace", Path: "", Expected: expected, Actual: actual}}
	}
	out := make([]DiffOp, 0, len(patch))
	for _, op := range patch {
		d := DiffOp{Op: op.Type, Path: op.Path}
		switch op.Type {
		case jsondiff.OperationAdd:
			d.Actual = op.Value
		case jsondiff.OperationRemove:
			d.Expected = op.OldValue
		default:
			d.Op = "replace"
			d.Expected, d.Actual = op.OldValue, op.Value
		}
		out = append(out, d)
	}
	return out
}
