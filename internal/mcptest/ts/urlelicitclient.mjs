// A TypeScript-SDK (1.32) MCP client for tapedeck's tests, against
// urlelicitserver.mjs: it declares URL-mode elicitation, calls "authorize",
// accepts the server's URL-mode elicitation/create, counts the server's
// notifications/elicitation/complete, and prints a transcript.
//
//   node urlelicitclient.mjs --stdio COMMAND [ARG...]
//
// The SDK is resolved from the directory in TAPEDECK_PEERS (.peers/).
import { createRequire } from "node:module";
import path from "node:path";

const peers = process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("urlelicitclient.mjs: TAPEDECK_PEERS must name the .peers directory");
  process.exit(2);
}
const require = createRequire(path.join(peers, "package.json"));
const sdk = (p) => import(require.resolve("@modelcontextprotocol/sdk/" + p));
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const types = await sdk("types.js");

const args = process.argv.slice(2);
if (args[0] !== "--stdio" || args.length < 2) {
  console.error("usage: urlelicitclient.mjs --stdio COMMAND [ARG...]");
  process.exit(2);
}
const out = (s) => process.stdout.write(s + "\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const client = new Client({ name: "ts-url-elicit-client", version: "1.0.0" }, { capabilities: { elicitation: { url: {} } } });
client.setRequestHandler(types.ElicitRequestSchema, async (request) => {
  const p = request.params;
  out(`elicit: ${p.mode} ${p.url} (${p.elicitationId}): accept`);
  return { action: "accept" };
});
const completed = [];
client.setNotificationHandler(types.ElicitationCompleteNotificationSchema, (n) => { completed.push(n.params.elicitationId); });
try {
  await client.connect(new StdioClientTransport({ command: args[1], args: args.slice(2), stderr: "ignore" }));
  out(`init: server ${client.getServerVersion()?.name} ${client.getServerVersion()?.version}`);
  const r = await client.callTool({ name: "authorize", arguments: {} });
  out(`authorize: ${(r.content ?? []).map((c) => c.text).join(" | ")}`);
  for (let i = 0; i < 100 && completed.length === 0; i++) await sleep(20);
  out(`elicitation complete: ${completed.join(" ")}`);
  await client.close();
} catch (e) {
  out(`error: ${e.message}`);
  process.exitCode = 1;
  await client.close().catch(() => {});
}
