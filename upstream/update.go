package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/tidwall/sjson"

	"github.com/tapedeck/tapedeck/tape"
)

// UpdateResult is what UpdateTape did.
type UpdateResult struct {
	// Replaced counts the recorded answers replaced by live ones; 0 means
	// dst was not written.
	Replaced int
	// Batches lists the tape lines whose answer differed but which hold a
	// batch: left as recorded.
	Batches []int
}

// UpdateTape writes tape src (indexed as x) to dst with each recorded
// answer that differed from the live server's in rep replaced by the live
// one: its recorded id and _meta kept, every other line byte for byte as
// recorded (verify --update, --in-place). dst may be src: src is then kept
// as src.bak. dst is replaced by rename, never left half written; nothing
// is written when every answer was as recorded.
func UpdateTape(src, dst string, x *tape.Index, rep VerifyReport) (UpdateResult, error) {
	var res UpdateResult
	repl := map[int][]byte{} // line number → the new line
	for _, c := range rep.Calls {
		if c.Pass || c.Answer == nil || c.Response < 0 {
			continue
		}
		m, err := x.Message(c.Response)
		if err != nil {
			return res, err
		}
		e := x.Entry(c.Response)
		answer := tape.StripMeta(c.Answer)
		if id, err := json.Marshal(json.RawMessage(m.ID)); err == nil && len(m.ID) > 0 {
			if a, err := sjson.SetRawBytes(answer, "id", id); err == nil {
				answer = a
			}
		}
		meta := tape.RecordMeta(m.Raw)
		line := answer
		if len(meta) > 0 {
			if l, err := sjson.SetRawBytes(answer, "_meta", meta); err == nil {
				line = l
			}
		}
		repl[e.Line] = line
	}
	if len(repl) == 0 {
		return res, nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return res, err
	}
	var out bytes.Buffer
	for i, l := range bytes.SplitAfter(data, []byte("\n")) {
		if nl, ok := repl[i+1]; ok && bytes.HasPrefix(bytes.TrimSpace(l), []byte("[")) {
			res.Batches = append(res.Batches, i+1)
		} else if ok {
			out.Write(nl)
			out.WriteByte('\n')
			res.Replaced++
			continue
		}
		out.Write(l)
	}
	if res.Replaced == 0 {
		return res, nil
	}
	if dst == src {
		if err := os.WriteFile(src+".bak", data, 0o600); err != nil {
			return UpdateResult{Batches: res.Batches}, fmt.Errorf("--in-place: keep %s.bak: %w", src, err)
		}
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, out.Bytes(), 0o600); err != nil {
		return UpdateResult{Batches: res.Batches}, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return UpdateResult{Batches: res.Batches}, err
	}
	return res, nil
}
