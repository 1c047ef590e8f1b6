package rules

// What a matched rule does to a message: its action recorded as an
// Injection, the error or answer it makes up, the JSON patch it applies, and
// the one-line summary an audit rule gives instead of acting.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/tidwall/sjson"

	"github.com/tapedeck/tapedeck/tape"
)

// apply records r's action on the message cur in d, and reports whether
// evaluation stops here (first match wins unless the rule says continue).
func (r *rule) apply(d *Decision, v *env, cur []byte) bool {
	inj := Injection{Rule: r.name, Action: string(r.action), Audit: r.audit}
	if r.audit {
		inj.Note = r.wouldDo(v)
		d.Injections = append(d.Injections, inj)
		d.Logs = append(d.Logs, fmt.Sprintf("audit: rule %s would %s %s", r.name, r.action, describe(v)))
		return !r.cont
	}
	d.Matched = true
	isRequest := v.phase == phaseRequest || v.phase == phaseServerRequest
	switch r.action {
	case Block:
		inj.Dropped = true
		d.Out = [][]byte{}
	case Error:
		if isRequest {
			inj.Dropped = true
			d.Out = [][]byte{}
			d.Reply = r.errorAnswer(v.ID())
			d.ReplyInjections = []Injection{{Rule: r.name, Action: string(Error), Injected: true}}
		} else if v.phase == phaseResponse {
			inj.Original = json.RawMessage(cur)
			d.Out = [][]byte{r.errorAnswer(v.ID())}
		} else { // a notification: nobody to answer
			inj.Dropped = true
			d.Out = [][]byte{}
		}
	case Modify:
		out, err := r.modify(cur)
		if err != nil {
			inj.Note = "patch failed, message sent unchanged: " + err.Error()
			d.Logs = append(d.Logs, fmt.Sprintf("rule %s: %s", r.name, inj.Note))
			break
		}
		inj.Original = json.RawMessage(cur)
		d.Out = [][]byte{compact(out)}
	case Delay:
		dl := r.delay()
		d.Delay += dl
		inj.DelayMS = dl.Milliseconds()
	case Respond:
		if !isRequest {
			inj.Note = "respond on a message that is not a request: sent on"
			break
		}
		ans := r.answer(v)
		if ans == nil {
			inj.Note = "the tape holds no answer to this call: sent on"
			d.Logs = append(d.Logs, fmt.Sprintf("rule %s: %s (%s)", r.name, inj.Note, describe(v)))
			break
		}
		inj.Dropped = true
		d.Out = [][]byte{}
		d.Reply = ans
		d.ReplyInjections = []Injection{{Rule: r.name, Action: string(Respond), Injected: true}}
	case Duplicate:
		d.Out = [][]byte{cur, cur}
	case Disconnect:
		inj.Dropped = true
		d.Disconnect = true
		d.Out = [][]byte{}
	case Log:
		text := r.logText
		if text == "" {
			text = describe(v)
		}
		d.Logs = append(d.Logs, fmt.Sprintf("rule %s: %s", r.name, text))
	}
	d.Injections = append(d.Injections, inj)
	return !r.cont
}

// wouldDo says in a few words what an audited rule would have done.
func (r *rule) wouldDo(v *env) string {
	switch r.action {
	case Error:
		if v.phase == phaseRequest || v.phase == phaseServerRequest {
			return "would answer with an error instead of sending it on"
		}
		return "would turn it into an error"
	case Delay:
		return fmt.Sprintf("would hold it %s", r.delay())
	}
	return "would " + string(r.action) + " it"
}

func describe(v *env) string {
	s := v.phase.String()
	if v.method != "" {
		s += " " + v.method
	}
	if v.target != "" {
		s += " " + v.target
	}
	if len(v.id) > 0 {
		s += " id " + string(v.id)
	}
	return s + " (" + string(v.msg.Dir) + ")"
}

// errorAnswer is the rule's error as an answer to id.
func (r *rule) errorAnswer(id tape.ID) []byte {
	if r.toolError != "" {
		text, _ := json.Marshal(r.toolError)
		return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":` + string(text) + `}],"isError":true}}`)
	}
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":` + string(r.errorObj) + `}`)
}

// answer is respond's answer to the request in v, or nil.
func (r *rule) answer(v *env) []byte {
	if r.result != nil {
		return []byte(`{"jsonrpc":"2.0","id":` + string(v.id) + `,"result":` + string(r.result) + `}`)
	}
	var m struct {
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(v.msg.Raw, &m)
	canon, _ := tape.Canonical(m.Params)
	ans, ok := r.answers.exact[v.method+"\x00"+string(canon)]
	if !ok {
		ans, ok = r.answers.loose[v.method+"\x00"+v.target]
	}
	if !ok {
		return nil
	}
	return append([]byte(`{"jsonrpc":"2.0","id":`+string(v.id)+`,`), ans[1:]...)
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

func sortStrings(s []string) { sort.Strings(s) }

// MarshalInjections encodes injections for _meta.injected.
func MarshalInjections(in []Injection) json.RawMessage {
	b, _ := json.Marshal(in)
	return b
}

// MaxMessage is the longest message a modify rule may make: the line
// limit of the stdio edges and of a tape (64 MiB). A patch whose result
// would be longer (a copy op that doubles the document again and again) is
// stopped as it is applied, and the message goes on unchanged with the
// rule's failure logged and recorded.
const MaxMessage = 64 << 20

// modify applies the rule's change to msg, refusing a result over r.maxOut.
func (r *rule) modify(msg []byte) ([]byte, error) {
	out, err := r.change(msg)
	if err != nil {
		return nil, err
	}
	if r.maxOut > 0 && len(out) > r.maxOut {
		return nil, fmt.Errorf("the modified message would be %d bytes, over the limit of %d", len(out), r.maxOut)
	}
	return out, nil
}

func (r *rule) change(msg []byte) ([]byte, error) {
	if r.fast == nil {
		o := jsonpatch.NewApplyOptions()
		// Copies are counted as they are made: a self-copying patch stops at
		// the bound instead of doubling a document into gigabytes.
		o.AccumulatedCopySizeLimit = int64(r.maxOut)
		out, err := r.patch.ApplyWithOptions(msg, o)
		var ce *jsonpatch.AccumulatedCopySizeError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("the patch's copies would add more than %d bytes, the limit of a message", r.maxOut)
		}
		return out, err
	}
	out := msg
	var err error
	for _, op := range r.fast {
		if op.del {
			out, err = sjson.DeleteBytes(out, op.path)
		} else {
			out, err = sjson.SetRawBytes(out, op.path, op.value)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
