package tape

// A tape's timestamps (_meta.ts): RFC 3339, read by the classifier once a
// message, most in one of the Writer's two forms.

import "time"

// Timestamps outside these years are taken as unknown: the index
// keeps times as Unix nanoseconds, and any two times within them are less
// than 2^63 ns apart, so a latency never overflows.
const (
	minYear = 1970
	maxYear = 2200
)

// The same bounds as Unix seconds: 1970-01-01 and 2201-01-01.
const (
	minUnix = 0
	maxUnix = 7289654400
)

// tsCache remembers the date and time to the second of the last timestamp
// parseTS read in one of the Writer's forms: a tape's timestamps come in
// order, most share it with the one before, and then only their fraction
// is new.
type tsCache struct {
	key  [19]byte // "2026-05-16T12:00:00", checked as parseTS checks it
	secs int64    // its Unix seconds
	ok   bool
}

// parse is parseTS(q), through the cache.
func (c *tsCache) parse(q []byte) (time.Time, bool) {
	if n := len(q); c.ok && (n == 26 || n == 29) && q[0] == '"' && q[20] == '.' && q[n-2] == 'Z' && string(q[1:20]) == string(c.key[:]) {
		if frac, ok := digits(q[21 : n-2]); ok {
			unit := time.Millisecond
			if n == 29 {
				unit = time.Microsecond
			}
			return time.Unix(c.secs, int64(frac)*int64(unit)).UTC(), true
		}
	}
	return parseTSCached(q, c)
}

// parseTS reads a quoted RFC 3339 timestamp; the mcporter form
// "2026-05-16T12:00:00.000Z" and the Writer's microsecond form
// "2026-05-16T12:00:00.000123Z" take a fast path, whose fields are checked as
// time.Parse checks them (time.Date would roll month 13 into next year).
func parseTS(q []byte) (time.Time, bool) { return parseTSCached(q, nil) }

// parseTSCached is parseTS, noting in cache (when not nil) the date and time
// of a timestamp it read through its fast path.
func parseTSCached(q []byte, cache *tsCache) (time.Time, bool) {
	if len(q) < 2 || q[0] != '"' {
		return time.Time{}, false
	}
	s := q[1 : len(q)-1]
	// The Writer's two forms: milliseconds (24 bytes) and microseconds (27).
	if (len(s) == 24 || len(s) == 27) && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' && s[16] == ':' && s[19] == '.' && s[len(s)-1] == 'Z' {
		n := [7]int{}
		ok := true
		for k, p := range [6]int{0, 5, 8, 11, 14, 17} { // two digits each, the year four
			a, b := s[p]-'0', s[p+1]-'0' // a byte below '0' wraps past 9
			ok = ok && a <= 9 && b <= 9
			n[k] = int(a)*10 + int(b)
		}
		c, d := s[2]-'0', s[3]-'0'
		ok = ok && c <= 9 && d <= 9
		n[0] = n[0]*100 + int(c)*10 + int(d)
		frac, fok := digits(s[20 : len(s)-1])
		if !ok || !fok {
			goto slow
		}
		n[6] = frac
		if n[1] < 1 || n[1] > 12 || n[2] < 1 || n[2] > 28 && n[2] > daysIn(n[0], n[1]) || n[3] > 23 || n[4] > 59 || n[5] > 59 {
			return time.Time{}, false
		}
		unit := time.Millisecond
		if len(s) == 27 {
			unit = time.Microsecond
		}
		secs := unixDays(n[0], n[1], n[2])*86400 + int64(n[3]*3600+n[4]*60+n[5])
		if cache != nil {
			copy(cache.key[:], s[:19])
			cache.secs, cache.ok = secs, true
		}
		return time.Unix(secs, int64(n[6])*int64(unit)).UTC(), true // time.Date's time, without its normalizing
	}
slow:
	t, err := time.Parse(time.RFC3339Nano, string(s))
	return t, err == nil
}

// daysIn is the number of days in month m (1-12) of year y.
// unixDays returns the days from 1970-01-01 to y-m-d (a valid date of the
// proleptic Gregorian calendar, year 0 to 9999), as time.Date counts them
// (H. Hinnant's days_from_civil).
func unixDays(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	doy := (153*((m+9)%12)+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era*146097 + doe - 719468)
}

func daysIn(y, m int) int {
	return time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func digits(s []byte) (int, bool) {
	v := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}
