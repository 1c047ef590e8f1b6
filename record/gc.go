package record

// GCPercent is the garbage collector's target (as GOGC) a recording
// process runs with: tapedeck record sets it unless GOGC is set. A
// recorder's live heap is small and each message it relays allocates about
// the same, so at Go's default of 100 it collects every few hundred
// messages, and a collection can land in a client request's time. With
// --shadow, whose copies allocate too, BenchmarkProxyShadow's shadow/plain
// p99 ratio had a median of 1.16 (interquartile 0.62–1.59, 18 runs over
// two sets) at 100 and 0.90 (0.69–1.14, 16 runs) at 400, at a load of 3–5
// (the control, two plain proxies: 0.83–1.16 over 9 runs); p50 and the
// recorder's CPU were the same. The price is a heap that may grow to five
// times what is live instead of twice.
const GCPercent = 400
