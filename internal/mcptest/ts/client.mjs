// A TypeScript-SDK MCP client for tapedeck's tests: it runs a fixed script
// against a server and prints a deterministic transcript (no times, no
// random ids), so that a live run and a replayed one can be compared.
//
//   node client.mjs --stdio COMMAND [ARG...]
//   node client.mjs --url http://127.0.0.1:PORT/mcp
//   node client.mjs --sse http://127.0.0.1:PORT/sse
//
// The SDK is resolved from the directory in TAPEDECK_PEERS (.peers/).
import { createRequire } from "node:module";
import path from "node:path";

const peers = process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("client.mjs: TAPEDECK_PEERS must name the .peers directory");
  process.exit(2);
}
const require = createRequire(path.join(peers, "package.json"));
const sdk = (p) => import(require.resolve("@modelcontextprotocol/sdk/" + p));
const { Client } = await sdk("client/index.js");

const args = process.argv.slice(2);
let transport;
if (args[0] === "--stdio") {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  transport = new StdioClientTransport({ command: args[1], args: args.slice(2), stderr: "ignore" });
} else if (args[0] === "--sse") {
  // The legacy HTTP+SSE transport (2024-11-05): GET the stream, POST to its endpoint.
  const { SSEClientTransport } = await sdk("client/sse.js");
  transport = new SSEClientTransport(new URL(args[1]));
} else if (args[0] === "--url") {
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(args[1]));
} else {
  console.error("usage: client.mjs --stdio COMMAND [ARG...] | --url URL | --sse URL");
  process.exit(2);
}

const client = new Client({ name: "ts-client", version: "1.0.0" }, { capabilities: { roots: { listChanged: true } } });
const out = (s) => process.stdout.write(s + "\n");
const text = (r) => (r.content ?? []).map((c) => c.text ?? c.type).join(" | ");
try {
  await client.connect(transport);
  out(`init: server ${client.getServerVersion()?.name}`);
  const tools = await client.listTools();
  out(`tools: ${tools.tools.map((t) => t.name).sort().join(" ")}`);
  out(`echo: ${text(await client.callTool({ name: "echo", arguments: { message: "hi" } }))}`);
  out(`sum: ${text(await client.callTool({ name: "get-sum", arguments: { a: 2, b: 3 } }))}`);
  const progress = [];
  const long = await client.callTool(
    { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 3 } },
    undefined,
    { onprogress: (p) => progress.push(`${p.progress}/${p.total}`) },
  );
  out(`progress: ${progress.join(" ")}`);
  out(`long: ${text(long)}`);
  const failed = await client.callTool({ name: "no-such-tool", arguments: {} }).catch((e) => ({ error: e.message }));
  out(`no-such-tool: ${failed.error ?? (failed.isError ? "tool error: " + text(failed) : text(failed))}`);
  await client.close();
} catch (e) {
  out(`error: ${e.message}`);
  process.exitCode = 1;
  await client.close().catch(() => {});
}
