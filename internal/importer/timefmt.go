package importer

import (
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// Times on the line importers' hot path, read and written by hand:
// time.Parse and Time.AppendFormat cost more than a line's other fields.
// Anything but the usual shapes goes to them.

// utcParser is parseUTC with the last time's second kept: a log's lines
// mostly share theirs, so only the fraction is read again.
type utcParser struct {
	sec  [19]byte // "YYYY-MM-DDTHH:MM:SS" of base
	base time.Time
	ok   bool
}

// parse is parseUTC(raw).
func (p *utcParser) parse(raw []byte) (time.Time, bool) {
	n := len(raw)
	if p.ok && n >= 22 && raw[0] == '"' && string(raw[1:20]) == string(p.sec[:]) {
		if ns, ok := fraction(raw[20 : n-2]); ok && raw[n-2] == 'Z' && raw[n-1] == '"' {
			return p.base.Add(time.Duration(ns)), true
		}
	}
	t, ok := parseUTC(raw)
	if ok {
		copy(p.sec[:], raw[1:20])
		p.base, p.ok = t.Truncate(time.Second), true
	}
	return t, ok
}

// fraction reads "" or ".F" (one to nine digits) as nanoseconds.
func fraction(frac []byte) (int, bool) {
	if len(frac) == 0 {
		return 0, true
	}
	if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
		return 0, false
	}
	v := 0
	for _, c := range frac[1:] {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	for range 10 - len(frac) {
		v *= 10
	}
	return v, true
}

// parseUTC reads raw, a JSON string "YYYY-MM-DDTHH:MM:SS[.F]Z" with one to
// nine fractional digits, as time.Parse(time.RFC3339Nano) does; ok false
// for any other text (parse it with parseTime).
func parseUTC(raw []byte) (time.Time, bool) {
	n := len(raw)
	if n < 22 || raw[0] != '"' || raw[n-1] != '"' || raw[n-2] != 'Z' {
		return time.Time{}, false
	}
	s := raw[1 : n-2] // without the quotes and the Z
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	num := func(b []byte) (int, bool) {
		v := 0
		for _, c := range b {
			if !isDigit(c) {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	year, ok1 := num(s[0:4])
	month, ok2 := num(s[5:7])
	day, ok3 := num(s[8:10])
	hour, ok4 := num(s[11:13])
	min, ok5 := num(s[14:16])
	sec, ok6 := num(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 || hour > 23 || min > 59 || sec > 59 {
		return time.Time{}, false
	}
	ns, ok := fraction(s[19:])
	if !ok {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, min, sec, ns, time.UTC)
	if t.Day() != day { // a day the month does not have: time.Parse refuses it
		return time.Time{}, false
	}
	return t, true
}

// tsWriter is appendTS with the last time's second kept, formatted.
type tsWriter struct {
	unix int64
	sec  []byte // "YYYY-MM-DDTHH:MM:SS." of unix, in UTC
}

// append is appendTS(b, t).
func (w *tsWriter) append(b []byte, t time.Time) []byte {
	u := t.Unix()
	if w.sec == nil || u != w.unix {
		year := t.UTC().Year()
		if year < 0 || year > 9999 {
			return appendTS(b, t)
		}
		w.sec = appendTS(w.sec[:0], t.Truncate(time.Second))
		w.sec = w.sec[:len(w.sec)-len("000Z")]
		w.unix = u
	}
	b = append(b, w.sec...)
	return appendFrac(b, t.Nanosecond())
}

// appendTS appends t as the tape's _meta.ts (without quotes), as a
// tape.Writer made KeepMicroseconds writes it: tape.TimeFormatMicro when
// t has a part below the millisecond, else tape.TimeFormat, in UTC.
func appendTS(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		if t.Nanosecond()%int(time.Millisecond) >= int(time.Microsecond) {
			return t.AppendFormat(b, tape.TimeFormatMicro)
		}
		return t.AppendFormat(b, tape.TimeFormat)
	}
	hour, min, sec := t.Clock()
	ns := t.Nanosecond()
	b = append(b,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+min/10), byte('0'+min%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.')
	return appendFrac(b, ns)
}

// appendFrac appends ns as _meta.ts's fraction and zone: six digits when
// it has a part below the millisecond, else three, then Z.
func appendFrac(b []byte, ns int) []byte {
	if ns%int(time.Millisecond) >= int(time.Microsecond) {
		us := ns / 1000
		b = append(b, byte('0'+us/100000), byte('0'+us/10000%10), byte('0'+us/1000%10),
			byte('0'+us/100%10), byte('0'+us/10%10), byte('0'+us%10))
	} else {
		ms := ns / 1000000
		b = append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	}
	return append(b, 'Z')
}
