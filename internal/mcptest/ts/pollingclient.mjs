// A TypeScript-SDK MCP client for the SSE polling example
// (ssepollingserver.mjs): it calls "long-task" over Streamable HTTP and
// prints a transcript with no times and no random ids: each log
// notification as it arrives, the resumption token the stream's events
// carried, and the result. When the server closes the POST's stream after
// its priming event, the SDK's transport resumes it on a GET with
// Last-Event-ID; a replay that never closes it does not exercise that.
//
//   node pollingclient.mjs --url http://127.0.0.1:PORT/mcp
//
// The SDK is resolved from the directory in TAPEDECK_PEERS (.peers/).
import { createRequire } from "node:module";
import path from "node:path";

const peers = process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("pollingclient.mjs: TAPEDECK_PEERS must name the .peers directory");
  process.exit(2);
}
const require = createRequire(path.join(peers, "package.json"));
const sdk = (p) => import(require.resolve("@modelcontextprotocol/sdk/" + p));
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const types = await sdk("types.js");

const args = process.argv.slice(2);
if (args[0] !== "--url" || !args[1]) {
  console.error("usage: pollingclient.mjs --url URL");
  process.exit(2);
}
// Reconnect at once: the example's retry is 2 s, and a replay answers the
// same however long the client waits.
const transport = new StreamableHTTPClientTransport(new URL(args[1]), {
  reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 5 },
});
const client = new Client({ name: "ts-polling-client", version: "1.0.0" });
const out = [];
client.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => {
  out.push(`log ${n.params.level}: ${n.params.data}`);
});
await client.connect(transport);
out.push(`server: ${client.getServerVersion()?.name}`);
const tokens = [];
const result = await client.request(
  { method: "tools/call", params: { name: "long-task", arguments: {} } },
  types.CallToolResultSchema,
  { onresumptiontoken: (t) => tokens.push(t), timeout: 30000 },
);
out.push(`result: ${result.content.map((c) => c.text).join(" ")}`);
out.push(`resumption tokens: ${tokens.length > 0 ? "yes" : "none"}`);
await transport.terminateSession().catch(() => {});
await client.close();
console.log(out.join("\n"));
