package importer

// mcp-recorder (github.com/devhelmhq/mcp-recorder, Python) cassettes: one
// JSON document,
//
//	{"version": "1.0",
//	 "metadata": {"recorded_at", "server_url", "transport_type",
//	              "protocol_version", "server_info": {"name", "version"}},
//	 "interactions": [{"type", "request", "response", "response_is_sse",
//	                   "response_status", "latency_ms", "http_method",
//	                   "http_path"}, ...]}
//
// type is jsonrpc_request (request and its response, or null), notification
// (request only; response_status is the HTTP answer, a 202) or lifecycle
// (an HTTP GET or DELETE of http_path, no message). Versions 1.x are read,
// as mcp-recorder itself reads them.
//
// Times: a cassette keeps one time, metadata.recorded_at (when the
// recording started), and each interaction's latency_ms; interactions are
// in the order they happened. So the tape lays them out end to end: each
// message is sent when the previous interaction ended (the first at
// recorded_at) and its answer comes latency_ms later. The gaps between
// interactions are not recorded and are zero on the tape.
//
// A cassette recorded over HTTP (server_url http:// or https://, or
// transport_type http) gives its records the HTTP dialect: transport,
// http (POST, or the lifecycle's method), status (response_status) on
// answers, stream for an answer that came as SSE (response_is_sse); a
// notification's answer and a lifecycle interaction are $http/exchange
// records {method, status, path}. The server is --server, else
// metadata.server_info.name, else the URL's host.

import (
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

const formatMCPRecorder = "mcp-recorder"

// MCPRecorder imports an mcp-recorder cassette.
func MCPRecorder(r io.Reader, w *tape.Writer, o Options) (Result, error) {
	doc, err := readAll(formatMCPRecorder, r, o.maxDocument())
	if err != nil {
		return Result{}, err
	}
	rt := root(formatMCPRecorder, doc)
	if err := rt.load(); err != nil {
		return Result{}, rt.errorf("expected an mcp-recorder cassette {\"version\", \"metadata\", \"interactions\"}, found %s", rt.found())
	}
	version, err := rt.get("version").optStr()
	if err != nil {
		return Result{}, err
	}
	if version != "" && strings.Split(version, ".")[0] != "1" {
		return Result{}, rt.get("version").errorf("expected a cassette of format version 1.x, found %q", version)
	}
	md := rt.get("metadata")
	if err := md.load(); err != nil {
		return Result{}, err
	}
	t, err := md.get("recorded_at").time()
	if err != nil {
		return Result{}, err
	}
	serverURL, err := md.get("server_url").optStr()
	if err != nil {
		return Result{}, err
	}
	transport, err := md.get("transport_type").optStr()
	if err != nil {
		return Result{}, err
	}
	protocol, err := md.get("protocol_version").optStr()
	if err != nil {
		return Result{}, err
	}
	var infoName string
	if si := md.get("server_info"); !si.absent() {
		if err := si.load(); err != nil {
			return Result{}, err
		}
		if infoName, err = si.get("name").optStr(); err != nil {
			return Result{}, err
		}
	}
	u, _ := url.Parse(serverURL)
	http := transport == "http" || transport == "streamable-http" || u != nil && (u.Scheme == "http" || u.Scheme == "https")
	if transport == "" && http {
		transport = "http"
	}
	server := o.Server
	if server == "" {
		server = infoName
	}
	if server == "" && u != nil {
		server = u.Hostname()
	}
	if server == "" {
		server = "server"
	}
	interactions, err := rt.get("interactions").array()
	if err != nil {
		return Result{}, err
	}

	out := newOut(w)
	meta := func(dir tape.Dir, at time.Time, extra map[string]any) tape.Meta {
		m := tape.Meta{Dir: dir, Server: server, Time: at}
		if http {
			x := map[string]any{tape.MetaTransport: "http", tape.MetaHTTP: "POST"}
			for k, v := range extra {
				x[k] = v
			}
			m.Extra = x
		}
		return m
	}
	if err := out.lifecycle(tape.MethodStart, startParams(formatMCPRecorder, map[string]any{"transport": transport, "upstream": serverURL, "protocolVersion": protocol}), meta(tape.DirLifecycle, t, nil)); err != nil {
		return out.result(), err
	}
	for i, in := range interactions {
		if err := in.load(); err != nil {
			return out.result(), err
		}
		typ, err := in.get("type").str()
		if err != nil {
			return out.result(), err
		}
		latency, err := ms(in.get("latency_ms"), 0)
		if err != nil {
			return out.result(), err
		}
		st, err := in.get("response_status").optNum(200)
		if err != nil {
			return out.result(), err
		}
		if st != float64(int(st)) || st < 100 || st > 999 {
			return out.result(), in.get("response_status").errorf("expected an HTTP status (100 to 999), found %v", st)
		}
		status := int(st)
		sse := false
		if v := in.get("response_is_sse"); !v.absent() {
			switch strings.TrimSpace(string(v.raw)) {
			case "true":
				sse = true
			case "false":
			default:
				return out.result(), v.errorf("expected true or false, found %s", v.found())
			}
		}
		end := t.Add(latency)
		req, resp := in.get("request"), in.get("response")
		switch typ {
		case "jsonrpc_request", "notification":
			msg, err := req.message()
			if err != nil {
				return out.result(), err
			}
			if err := out.message(msg, meta(tape.DirSend, t, nil)); err != nil {
				return out.result(), err
			}
			if !resp.absent() {
				answer, err := resp.message()
				if err != nil {
					return out.result(), err
				}
				x := map[string]any{tape.MetaStatus: status}
				if sse {
					x[tape.MetaStream] = i + 1
				}
				if err := out.message(answer, meta(tape.DirRecv, end, x)); err != nil {
					return out.result(), err
				}
			} else if http && typ == "notification" {
				if err := out.lifecycle(tape.MethodHTTPExchange, map[string]any{"method": "POST", "status": status}, meta(tape.DirLifecycle, end, map[string]any{tape.MetaStatus: status})); err != nil {
					return out.result(), err
				}
			}
		case "lifecycle":
			method, err := in.get("http_method").str()
			if err != nil {
				return out.result(), in.get("http_method").errorf("expected the HTTP method of a lifecycle interaction (GET, DELETE), found %s", in.get("http_method").found())
			}
			path, err := in.get("http_path").optStr()
			if err != nil {
				return out.result(), err
			}
			if !req.absent() || !resp.absent() {
				return out.result(), in.errorf("expected a lifecycle interaction without request or response, found a message")
			}
			p := map[string]any{"method": strings.ToUpper(method), "status": status}
			if path != "" {
				p["path"] = path
			}
			if err := out.lifecycle(tape.MethodHTTPExchange, p, meta(tape.DirLifecycle, end, map[string]any{tape.MetaHTTP: strings.ToUpper(method), tape.MetaStatus: status})); err != nil {
				return out.result(), err
			}
		default:
			return out.result(), in.get("type").errorf(`expected "jsonrpc_request", "notification" or "lifecycle", found %q`, typ)
		}
		t = end
	}
	return out.result(), nil
}
