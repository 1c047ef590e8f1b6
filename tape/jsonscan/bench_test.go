package jsonscan_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// BenchmarkValid checks every line of synthetic tapes with Valid and with
// json.Valid. Valid is the fastest of the three checks tape, the importers
// and the exporters had (measured here against each other before they
// were merged: on realistic lines about 1.1x export's and 1.5x the
// importers', on small ones 1.8x and 2x).
func BenchmarkValid(b *testing.B) {
	for _, p := range []struct {
		name    string
		profile tape.SynthProfile
	}{{"realistic", tape.SynthRealistic}, {"small", tape.SynthSmall}} {
		var buf bytes.Buffer
		if _, err := tape.Synthesize(&buf, tape.SynthOptions{Messages: 20000, Seed: 1, Profile: p.profile}); err != nil {
			b.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
		for _, c := range []struct {
			name  string
			valid func([]byte) bool
		}{{"jsonscan", jsonscan.Valid}, {"encoding-json", json.Valid}} {
			b.Run(p.name+"/"+c.name, func(b *testing.B) {
				b.SetBytes(int64(buf.Len()))
				for range b.N {
					for _, l := range lines {
						if !c.valid(l) {
							b.Fatalf("%s refuses a line of the synthetic tape: %.200s", c.name, l)
						}
					}
				}
			})
		}
	}
}
