package export

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// encodingJSON is what encoding/json writes for v, without the newline.
func encodingJSON(t testing.TB, v any, escapeHTML bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func TestAppendJSONFloatAgrees(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.5, 1e-6, 9.99e-7, 1e-7, -1e-9, 1e20, 1e21, 1.5e300, 123.456, 3.000001, math.SmallestNonzeroFloat64, math.MaxFloat64, 216, 0.001} {
		want := encodingJSON(t, f, false)
		if got := appendJSONFloat(nil, f); string(got) != string(want) {
			t.Errorf("%v: expected %s, found %s", f, want, got)
		}
	}
}
