// A 2026-07-28 MCP client on the v2 TypeScript SDK (@modelcontextprotocol/client)
// over Streamable HTTP, for tapedeck's tests, against v2httpserver.mjs: it
// lists the tools, calls "deploy" (the SDK sends Mcp-Param-Region), opens a
// subscriptions/listen stream for tools and prompts list changes, calls
// "touch", waits for both notifications, closes the subscription, and prints a transcript.
//
//   node v2httpclient.mjs URL
//
// The SDK is resolved from the directory in TAPEDECK_PEERS (.peers/).
import { createRequire } from "node:module";
import path from "node:path";

const peers = process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("v2httpclient.mjs: TAPEDECK_PEERS must name the .peers directory");
  process.exit(2);
}
const require = createRequire(path.join(peers, "package.json"));
const { Client, StreamableHTTPClientTransport } = await import(require.resolve("@modelcontextprotocol/client"));

const url = process.argv[2];
if (!url) {
  console.error("usage: v2httpclient.mjs URL");
  process.exit(2);
}
const out = (s) => process.stdout.write(s + "\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (r) => (r.content ?? []).map((c) => c.text ?? c.type).join(" | ");
const client = new Client({ name: "v2-http-client", version: "2.4.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
let changed = 0, promptsChanged = 0;
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  out(`init: server ${client.getServerVersion()?.name} ${client.getServerVersion()?.version}`);
  const tools = await client.listTools();
  out(`tools: ${tools.tools.map((t) => t.name).sort().join(" ")}`);
  out(`deploy: ${text(await client.callTool({ name: "deploy", arguments: { region: "eu-west-1", app: "tapes" } }))}`);
  client.setNotificationHandler("notifications/tools/list_changed", () => { changed++; });
  client.setNotificationHandler("notifications/prompts/list_changed", () => { promptsChanged++; });
  const sub = await client.listen({ toolsListChanged: true, promptsListChanged: true });
  out(`listen: honored ${JSON.stringify(sub.honoredFilter)}`);
  out(`touch: ${text(await client.callTool({ name: "touch", arguments: {} }))}`);
  for (let i = 0; i < 100 && (changed === 0 || promptsChanged === 0); i++) await sleep(20);
  out(`tools list_changed: ${changed}`);
  out(`prompts list_changed: ${promptsChanged}`);
  await sub.close();
  out(`closed: ${await sub.closed}`);
  await client.close();
} catch (e) {
  out(`error: ${e.message}`);
  process.exitCode = 1;
  await client.close().catch(() => {});
}
