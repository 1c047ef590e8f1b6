package importer

// agent-vcr (github.com/Jarvis2021/agent-vcr) .vcr recordings: one JSON
// document,
//
//	{"format_version": "1.0.0",
//	 "metadata": {"version", "recorded_at", "transport": "stdio"|"sse",
//	              "client_info", "server_info": {"name"}, "server_command",
//	              "server_args", "tags", "session_id", ...},
//	 "session": {"initialize_request", "initialize_response", "capabilities",
//	             "interactions": [{"sequence", "timestamp", "direction",
//	                               "request", "response", "notifications",
//	                               "latency_ms"}, ...]}}
//
// direction is client_to_server (request sent by the client, response and
// notifications from the server) or server_to_client (the server's
// request, the client's response). notifications are the server's
// notifications agent-vcr buffered until the interaction's response; they
// are written between request and response. Times are Python datetimes,
// with or without a zone (without: taken as UTC).
//
// Times: the initialize request and its response at metadata.recorded_at
// (agent-vcr keeps no latency for them); each interaction's request at its
// timestamp, its notifications and response latency_ms later. The server
// is --server, else metadata.server_info.name.

import (
	"io"
	"strings"

	"github.com/tapedeck/tapedeck/tape"
)

const formatAgentVCR = "agent-vcr"

// AgentVCR imports an agent-vcr .vcr recording.
func AgentVCR(r io.Reader, w *tape.Writer, o Options) (Result, error) {
	doc, err := readAll(formatAgentVCR, r, o.maxDocument())
	if err != nil {
		return Result{}, err
	}
	rt := root(formatAgentVCR, doc)
	if err := rt.load(); err != nil {
		return Result{}, rt.errorf("expected an agent-vcr recording {\"format_version\", \"metadata\", \"session\"}, found %s", rt.found())
	}
	version, err := rt.get("format_version").optStr()
	if err != nil {
		return Result{}, err
	}
	if version != "" && strings.Split(version, ".")[0] != "1" {
		return Result{}, rt.get("format_version").errorf("expected a recording of format version 1.x, found %q", version)
	}
	md := rt.get("metadata")
	if err := md.load(); err != nil {
		return Result{}, err
	}
	start, err := md.get("recorded_at").time()
	if err != nil {
		return Result{}, err
	}
	transport, err := md.get("transport").optStr()
	if err != nil {
		return Result{}, err
	}
	command, err := md.get("server_command").optStr()
	if err != nil {
		return Result{}, err
	}
	sessionID, err := md.get("session_id").optStr()
	if err != nil {
		return Result{}, err
	}
	var args []string
	if a := md.get("server_args"); !a.absent() {
		elems, err := a.array()
		if err != nil {
			return Result{}, err
		}
		for _, e := range elems {
			s, err := e.str()
			if err != nil {
				return Result{}, err
			}
			args = append(args, s)
		}
	}
	names := map[string]string{}
	for _, k := range []string{"server_info", "client_info"} {
		if n := md.get(k); !n.absent() {
			if err := n.load(); err != nil {
				return Result{}, err
			}
			if names[k], err = n.get("name").optStr(); err != nil {
				return Result{}, err
			}
		}
	}
	server := o.Server
	if server == "" {
		server = names["server_info"]
	}
	if server == "" {
		server = "server"
	}
	ss := rt.get("session")
	if err := ss.load(); err != nil {
		return Result{}, err
	}
	initReq, err := ss.get("initialize_request").message()
	if err != nil {
		return Result{}, err
	}
	initResp, err := ss.get("initialize_response").message()
	if err != nil {
		return Result{}, err
	}
	interactions, err := ss.get("interactions").array()
	if err != nil {
		return Result{}, err
	}

	out := newOut(w)
	m := func(dir tape.Dir) tape.Meta { return tape.Meta{Dir: dir, Server: server, Time: start} }
	sp := map[string]any{"transport": transport, "command": command, "session": sessionID, "client": names["client_info"]}
	if len(args) > 0 {
		sp["args"] = args
	}
	if err := out.lifecycle(tape.MethodStart, startParams(formatAgentVCR, sp), m(tape.DirLifecycle)); err != nil {
		return out.result(), err
	}
	if err := out.message(initReq, m(tape.DirSend)); err != nil {
		return out.result(), err
	}
	if err := out.message(initResp, m(tape.DirRecv)); err != nil {
		return out.result(), err
	}
	for _, in := range interactions {
		if err := in.load(); err != nil {
			return out.result(), err
		}
		at, err := in.get("timestamp").time()
		if err != nil {
			return out.result(), err
		}
		latency, err := ms(in.get("latency_ms"), 0)
		if err != nil {
			return out.result(), err
		}
		dir, err := in.get("direction").str()
		if err != nil {
			return out.result(), err
		}
		there, back := tape.DirSend, tape.DirRecv
		switch dir {
		case "client_to_server":
		case "server_to_client":
			there, back = tape.DirRecv, tape.DirSend
		default:
			return out.result(), in.get("direction").errorf(`expected "client_to_server" or "server_to_client", found %q`, dir)
		}
		req, err := in.get("request").message()
		if err != nil {
			return out.result(), err
		}
		var resp []byte
		if r := in.get("response"); !r.absent() {
			if resp, err = r.message(); err != nil {
				return out.result(), err
			}
		}
		var notes [][]byte
		if ns := in.get("notifications"); !ns.absent() {
			elems, err := ns.array()
			if err != nil {
				return out.result(), err
			}
			for _, n := range elems {
				msg, err := n.message()
				if err != nil {
					return out.result(), err
				}
				notes = append(notes, msg)
			}
		}
		end := at.Add(latency)
		if err := out.message(req, tape.Meta{Dir: there, Server: server, Time: at}); err != nil {
			return out.result(), err
		}
		for _, n := range notes {
			if err := out.message(n, tape.Meta{Dir: tape.DirRecv, Server: server, Time: end}); err != nil {
				return out.result(), err
			}
		}
		if resp != nil {
			if err := out.message(resp, tape.Meta{Dir: back, Server: server, Time: end}); err != nil {
				return out.result(), err
			}
		}
	}
	return out.result(), nil
}
