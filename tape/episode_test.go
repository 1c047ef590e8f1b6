package tape

import (
	"strings"
	"testing"
)

func episodeIndex(t *testing.T, lines ...string) *Index {
	t.Helper()
	src := strings.Join(lines, "\n") + "\n"
	x := NewIndex(strings.NewReader(src))
	if err := x.Extend(int64(len(src)), nil); err != nil {
		t.Fatal(err)
	}
	return x
}

func TestEpisodes(t *testing.T) {
	const (
		start    = `{"jsonrpc":"2.0","method":"$transport/start","_meta":{"dir":"lifecycle","server":"s"}}`
		startNew = `{"jsonrpc":"2.0","method":"$transport/start","params":{"episode":"new"},"_meta":{"dir":"lifecycle","server":"s"}}`
		close    = `{"jsonrpc":"2.0","method":"$transport/close","_meta":{"dir":"lifecycle","server":"s"}}`
		discover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","_meta":{"dir":"send","server":"s"}}`
		answer   = `{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv","server":"s"}}`
		list     = `{"jsonrpc":"2.0","id":0,"method":"tools/list","_meta":{"dir":"send","server":"s"}}`
		other    = `{"jsonrpc":"2.0","id":0,"method":"tools/list","_meta":{"dir":"send","server":"o"}}`
		otherGo  = `{"jsonrpc":"2.0","method":"$transport/start","_meta":{"dir":"lifecycle","server":"o"}}`
	)
	tests := []struct {
		name  string
		lines []string
		want  []Episode
	}{
		{"one run", []string{start, discover, answer, list, answer, close},
			[]Episode{{Lo: 0, Hi: 6, First: 1}}},
		{"probe, then the session", []string{start, discover, answer, close, start, list, answer, close},
			[]Episode{{Lo: 0, Hi: 4, First: 1, ProbeOnly: true}, {Lo: 4, Hi: 8, First: 5}}},
		{"a continuation is no episode of its own", []string{start, list, answer, startNew, list, answer},
			[]Episode{{Lo: 0, Hi: 6, First: 1}}},
		{"another server's starts do not split", []string{start, discover, answer, otherGo, other, list, answer},
			[]Episode{{Lo: 0, Hi: 7, First: 1}}},
		{"no start record", []string{list, answer},
			[]Episode{{Lo: 0, Hi: 2, First: 0}}},
		{"a start with nothing after it", []string{start, discover, answer, close, start},
			[]Episode{{Lo: 0, Hi: 4, First: 1, ProbeOnly: true}, {Lo: 4, Hi: 5, First: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := episodeIndex(t, tt.lines...)
			got := Episodes(x, "s")
			if len(got) != len(tt.want) {
				t.Fatalf("Episodes = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("episode %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
