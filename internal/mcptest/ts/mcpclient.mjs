// The TypeScript SDK's client against tapedeck mcp: it lists the tools and
// calls list_tapes and tape_stats, printing a deterministic transcript. The
// SDK's client checks each result's structuredContent against the tool's
// outputSchema (Ajv) and throws when it does not validate.
//
//   node mcpclient.mjs COMMAND [ARG...]
//
// The SDK is resolved from the directory in TAPEDECK_PEERS (.peers/).
import { createRequire } from "node:module";
import path from "node:path";

const peers = process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("mcpclient.mjs: TAPEDECK_PEERS must name the .peers directory");
  process.exit(2);
}
const require = createRequire(path.join(peers, "package.json"));
const sdk = (p) => import(require.resolve("@modelcontextprotocol/sdk/" + p));
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const args = process.argv.slice(2);
const transport = new StdioClientTransport({ command: args[0], args: args.slice(1), stderr: "ignore", env: process.env });
const client = new Client({ name: "ts-mcp-client", version: "1.0.0" });
const out = (s) => process.stdout.write(s + "\n");
try {
  await client.connect(transport);
  out(`init: server ${client.getServerVersion()?.name}`);
  const tools = await client.listTools();
  out(`tools: ${tools.tools.map((t) => t.name).sort().join(" ")}`);
  out(`output schemas: ${tools.tools.filter((t) => t.outputSchema?.type === "object").length}`);
  const list = await client.callTool({ name: "list_tapes", arguments: {} });
  const tapes = list.structuredContent?.tapes ?? [];
  out(`list_tapes: ${tapes.length} tape(s), calls ${tapes.map((t) => t.calls).join(",")}`);
  const st = await client.callTool({ name: "tape_stats", arguments: { tape: tapes[0]?.path ?? "" } });
  out(`tape_stats: ${st.isError ? "error" : st.structuredContent.stats.messages + " messages"}`);
  const outside = await client.callTool({ name: "tape_stats", arguments: { tape: "/etc/passwd" } });
  out(`outside: ${outside.isError ? "refused" : "read"}`);
  await client.close();
} catch (e) {
  out(`error: ${e.message}`);
  process.exitCode = 1;
  await client.close().catch(() => {});
}
