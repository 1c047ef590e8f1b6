package importer

import "github.com/tapedeck/tapedeck/tape/jsonscan"

// strEnd is jsonscan.StringEnd, kept for the Jaeger importer's callers.
func strEnd(b []byte, i int) int { return jsonscan.StringEnd(b, i) }
