package importer

import "bytes"

// guessStarts returns up to n-1 indices in t after from, increasing and
// roughly evenly apart (the k-th searched from k*len(t)/n): each the
// first place past there where sep occurs, plus at (the offset in sep of
// an element's first byte). They are guessed starts of an array's
// elements, where a scan of the array on several cores cuts it into
// segments: a caller takes a guess only once the scan before it has ended
// exactly there (inspector_par.go, jaeger_par.go), so a wrong one costs
// time, never a different reading.
func guessStarts(t []byte, from, n int, sep []byte, at int) []int {
	var g []int
	last := from
	for k := 1; k < n; k++ {
		p := max(k*len(t)/n, last+1)
		if p >= len(t) {
			break
		}
		x := bytes.Index(t[p:], sep)
		if x < 0 {
			break
		}
		last = p + x + at
		g = append(g, last)
	}
	return g
}
