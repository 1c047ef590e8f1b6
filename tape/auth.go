package tape

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
)

// AuthStats is what a tape recorded of an OAuth handshake over HTTP: the
// challenges the server answered requests with (MethodHTTPExchange records
// with ParamWWWAuthenticate, paired with the requests they refused), the
// protected resource metadata documents served (MethodHTTPMetadata), and
// whether the client sent the refused requests again, with a token.
type AuthStats struct {
	Challenges int `json:"challenges"` // 401s with a WWW-Authenticate challenge
	StepUps    int `json:"step_ups"`   // 403s with one (insufficient_scope: the client needs more scope)
	Metadata   int `json:"metadata"`   // protected resource metadata documents served
	// Retried counts the refused requests the client sent again later (the
	// same method, answered this time); Refused is Challenges + StepUps
	// that refused a request.
	Retried int `json:"retried"`
	Refused int `json:"refused"`
	// Through the proxy (record --proxy-auth, MethodHTTPAuth records):
	// authorization server metadata documents, registrations, authorize
	// requests, token requests and other endpoints' exchanges.
	ServerMetadata int `json:"as_metadata,omitempty"`
	Registrations  int `json:"registrations,omitempty"`
	Authorizations int `json:"authorizations,omitempty"`
	TokenRequests  int `json:"token_requests,omitempty"`
	OtherExchanges int `json:"other_exchanges,omitempty"`
}

// Fingerprint is what a tape keeps of a secret whose use must still be
// followed from one record to the next (an authorization code from the
// redirect to the token request, a refresh token from the answer to its
// use): the marker and the first 12 hex digits of its SHA-256, "[REDACTED]
// sha256:0123456789ab". 48 bits say which secret it is, not what it is.
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return RedactedMarker + " sha256:" + hex.EncodeToString(sum[:6])
}

// AddAuth fills in st.Auth from the HTTP dialect's auth records of x (of
// server, or every server when it is ""), reading only those lifecycle
// records again; st.Auth stays nil when the tape has none.
func AddAuth(st *Stats, x *Index, server string) {
	var a AuthStats
	var refused []int // the requests refused, in order
	for _, i := range x.seqsOf(KindLifecycle) {
		en := x.Entry(i)
		if server != "" && en.Server != server {
			continue
		}
		switch en.Method {
		case MethodHTTPMetadata:
			a.Metadata++
		case MethodHTTPAuth:
			m, err := x.Message(i)
			if err != nil {
				continue
			}
			switch gjson.GetBytes(m.Raw, "params.endpoint").String() {
			case "metadata":
				a.ServerMetadata++
			case "registration":
				a.Registrations++
			case "authorization":
				a.Authorizations++
			case "token":
				a.TokenRequests++
			default:
				a.OtherExchanges++
			}
		case MethodHTTPExchange:
			m, err := x.Message(i)
			if err != nil {
				continue
			}
			status, ok := Challenge(m.Raw)
			if !ok {
				continue
			}
			if status == 403 {
				a.StepUps++
			} else {
				a.Challenges++
			}
			if req := x.Pair(i).Partner; req >= 0 {
				refused = append(refused, req)
			}
		}
	}
	if a == (AuthStats{}) {
		return
	}
	a.Refused = len(refused)
	for _, req := range refused {
		r := x.Entry(req)
		for j := req + 1; j < x.Len(); j++ {
			en := x.Entry(j)
			if en.Server != r.Server || en.Dir != r.Dir || en.Kind != KindRequest || en.Method != r.Method {
				continue
			}
			if p := x.Pair(j).Partner; p >= 0 && x.Entry(p).Kind != KindLifecycle {
				a.Retried++
				break
			}
		}
	}
	st.Auth = &a
}

// Challenge reports whether raw is a MethodHTTPExchange that carried an
// authorization challenge (a 401 or 403 with WWW-Authenticate), and its
// HTTP status.
func Challenge(raw []byte) (status int, ok bool) {
	p := gjson.GetBytes(raw, "params")
	if !p.Get(ParamWWWAuthenticate).IsArray() {
		return 0, false
	}
	status = int(p.Get("status").Int())
	return status, status == 401 || status == 403
}

// String is the auth line of stats: "1 challenge (401), 1 metadata
// document served; the client retried with a token (1 of 1 refused
// requests)".
func (a AuthStats) String() string {
	parts := []string{plural(a.Challenges, "challenge") + " (401)"}
	if a.StepUps > 0 {
		parts = append(parts, plural(a.StepUps, "step-up")+" (403)")
	}
	parts = append(parts, plural(a.Metadata, "metadata document")+" served")
	s := strings.Join(parts, ", ")
	switch {
	case a.Refused == 0:
	case a.Retried == a.Refused:
		s += fmt.Sprintf("; the client retried with a token (%d of %s)", a.Retried, plural(a.Refused, "refused request"))
	case a.Retried == 0:
		s += fmt.Sprintf("; the client did not retry (%s)", plural(a.Refused, "refused request"))
	default:
		s += fmt.Sprintf("; the client retried %d of %s", a.Retried, plural(a.Refused, "refused request"))
	}
	var as []string
	for _, c := range []struct {
		n    int
		what string
	}{{a.ServerMetadata, "authorization server metadata document"}, {a.Registrations, "registration"},
		{a.Authorizations, "authorize request"}, {a.TokenRequests, "token request"}, {a.OtherExchanges, "other exchange"}} {
		if c.n > 0 {
			as = append(as, plural(c.n, c.what))
		}
	}
	if len(as) > 0 {
		s += "; through the proxy: " + strings.Join(as, ", ")
	}
	return s
}

// plural is "1 thing" or "N things" (tape imports no internal/text).
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// challengeParam is one auth-param of a WWW-Authenticate value (RFC 9110
// §11.2): name=token or name="quoted string".
var challengeParam = regexp.MustCompile(`([A-Za-z0-9_!#$%&'*+.^|~-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]+)`)

// ChallengeParams returns the auth-params of a WWW-Authenticate value
// ("Bearer error=\"insufficient_scope\", scope=\"a b\", resource_metadata=…"),
// names in lower case, quoted strings unquoted.
func ChallengeParams(v string) map[string]string {
	out := map[string]string{}
	for _, m := range challengeParam.FindAllStringSubmatch(v, -1) {
		val := m[2]
		if strings.HasPrefix(val, `"`) {
			val = strings.ReplaceAll(strings.ReplaceAll(val[1:len(val)-1], `\"`, `"`), `\\`, `\`)
		}
		out[strings.ToLower(m[1])] = val
	}
	return out
}
