// The TypeScript SDK's SSE polling example (SEP-1699), unchanged, made to
// listen on loopback at a port the system picks, for tapedeck's tests:
// its "long-task" tool closes the POST's SSE stream after two log
// notifications, and the client resumes on a GET with Last-Event-ID.
//
//   node ssepollingserver.mjs
//
// It prints "ssepolling: mcp http://127.0.0.1:PORT/mcp" once it listens.
// The SDK is resolved from the directory in TAPEDECK_PEERS (.peers/).
import net from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";

const peers = process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("ssepollingserver.mjs: TAPEDECK_PEERS must name the .peers directory");
  process.exit(2);
}

// The example calls app.listen(3001): listen on 127.0.0.1, port 0 instead.
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (port, ...rest) {
  const cb = rest.find((a) => typeof a === "function");
  this.once("listening", () => {
    const a = this.address();
    console.log(`ssepolling: mcp http://127.0.0.1:${a.port}/mcp`);
  });
  return cb ? listen.call(this, 0, "127.0.0.1", cb) : listen.call(this, 0, "127.0.0.1");
};

const example = path.join(peers, "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", "examples", "server", "ssePollingExample.js");
await import(pathToFileURL(example).href);
