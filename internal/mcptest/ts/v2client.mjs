// A 2026-07-28 MCP client on the v2 TypeScript SDK (@modelcontextprotocol/client),
// version negotiation pinned to 2026-07-28, for tapedeck's tests: it runs a
// fixed script against a stdio server and prints a deterministic transcript.
// Over stdio the SDK starts the server command twice: once for the
// server/discover probe (then killed), once for the session.
//
//   node v2client.mjs COMMAND [ARG...]
//
// The SDK is resolved from the directory in TAPEDECK_PEERS (.peers/).
import { createRequire } from "node:module";
import path from "node:path";

const peers = process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("v2client.mjs: TAPEDECK_PEERS must name the .peers directory");
  process.exit(2);
}
const require = createRequire(path.join(peers, "package.json"));
const { Client } = await import(require.resolve("@modelcontextprotocol/client"));
const { StdioClientTransport } = await import(require.resolve("@modelcontextprotocol/client/stdio"));

const args = process.argv.slice(2);
if (args.length === 0) {
  console.error("usage: v2client.mjs COMMAND [ARG...]");
  process.exit(2);
}
// The server gets this process's environment (the SDK passes only a few
// variables by default), so a scripted server finds TAPEDECK_PEERS too.
const transport = new StdioClientTransport({ command: args[0], args: args.slice(1), env: { ...process.env }, stderr: "ignore" });
const client = new Client({ name: "v2-client", version: "2.4.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
const out = (s) => process.stdout.write(s + "\n");
const text = (r) => (r.content ?? []).map((c) => c.text ?? c.type).join(" | ");
try {
  await client.connect(transport);
  out(`init: server ${client.getServerVersion()?.name} ${client.getServerVersion()?.version}`);
  const tools = await client.listTools();
  out(`tools: ${tools.tools.map((t) => t.name).sort().join(" ")}`);
  out(`echo: ${text(await client.callTool({ name: "echo", arguments: { message: "hi" } }))}`);
  out(`add: ${text(await client.callTool({ name: "add", arguments: { a: 2, b: 3 } }))}`);
  await client.close();
} catch (e) {
  out(`error: ${e.message}`);
  process.exitCode = 1;
  await client.close().catch(() => {});
}
