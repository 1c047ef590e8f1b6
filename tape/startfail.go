package tape

import "encoding/json"

// startFailed reports whether a $transport/start record says its server
// could not be started (params.error: the recorder's spawn failed). Start
// records are one a connection, so decoding them costs nothing.
func startFailed(rec []byte) bool {
	var r struct {
		Params struct {
			Error string `json:"error"`
		} `json:"params"`
	}
	return json.Unmarshal(rec, &r) == nil && r.Params.Error != ""
}

// StartFailures returns how many servers the tape says failed to start
// (a $transport/start record with an error): a recording that never
// reached its server.
func (x *Index) StartFailures() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.startFailures
}
