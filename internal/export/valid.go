package export

import "encoding/binary"

// validJSON reports what json.Valid reports, faster: strings (most of a
// tape's bytes) are crossed eight bytes at a time. TestValidJSONAgrees
// holds it to json.Valid.
func validJSON(s []byte) bool {
	var stack []byte // '{' or '[' of each open container
	i := ws(s, 0)
	for {
		// A value at s[i].
		if i >= len(s) {
			return false
		}
		switch ch := s[i]; {
		case ch == '{' || ch == '[':
			if len(stack) >= 10000 {
				return false // json.Valid's nesting limit
			}
			stack = append(stack, ch)
			i = ws(s, i+1)
			if i < len(s) && (ch == '{' && s[i] == '}' || ch == '[' && s[i] == ']') {
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if ch == '{' {
				if i = key(s, i); i < 0 {
					return false
				}
			}
			continue
		case ch == '"':
			if i = str(s, i); i < 0 {
				return false
			}
		case ch == '-' || ch >= '0' && ch <= '9':
			if i = number(s, i); i < 0 {
				return false
			}
		case ch == 't':
			if i = lit(s, i, "true"); i < 0 {
				return false
			}
		case ch == 'f':
			if i = lit(s, i, "false"); i < 0 {
				return false
			}
		case ch == 'n':
			if i = lit(s, i, "null"); i < 0 {
				return false
			}
		default:
			return false
		}
		// After a value: close containers, or a comma and the next value.
		for {
			i = ws(s, i)
			if len(stack) == 0 {
				return i == len(s)
			}
			if i >= len(s) {
				return false
			}
			top := stack[len(stack)-1]
			if top == '{' && s[i] == '}' || top == '[' && s[i] == ']' {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if s[i] != ',' {
				return false
			}
			i = ws(s, i+1)
			if top == '{' {
				if i = key(s, i); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// key crosses `"key" :` and the space after it.
func key(s []byte, i int) int {
	if i >= len(s) || s[i] != '"' {
		return -1
	}
	if i = str(s, i); i < 0 {
		return -1
	}
	i = ws(s, i)
	if i >= len(s) || s[i] != ':' {
		return -1
	}
	return ws(s, i+1)
}

func ws(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

func lit(s []byte, i int, l string) int {
	if len(s)-i < len(l) || string(s[i:i+len(l)]) != l {
		return -1
	}
	return i + len(l)
}

// str returns the end of the string at s[i], or -1.
func str(s []byte, i int) int {
	j := i + 1
	for {
		for j+8 <= len(s) {
			w := binary.LittleEndian.Uint64(s[j:])
			const ones, highs = 0x0101010101010101, 0x8080808080808080
			q, bs := w^(ones*'"'), w^(ones*'\\')
			if ((q-ones)&^q|(bs-ones)&^bs|(w-ones*0x20)&^w)&highs != 0 {
				break
			}
			j += 8
		}
		if j >= len(s) {
			return -1
		}
		switch ch := s[j]; {
		case ch == '"':
			return j + 1
		case ch == '\\':
			if j+1 >= len(s) {
				return -1
			}
			switch s[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(s) {
					return -1
				}
				for _, h := range s[j+2 : j+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1
					}
				}
				j += 6
			default:
				return -1
			}
		case ch < 0x20:
			return -1
		default:
			j++
		}
	}
}

// number returns the end of the number at s[i], or -1.
func number(s []byte, i int) int {
	if s[i] == '-' {
		i++
	}
	digits := func() int {
		k := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - k
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return -1
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return -1
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return -1
		}
	}
	return i
}
