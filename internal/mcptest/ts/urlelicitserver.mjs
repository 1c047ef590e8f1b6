// A TypeScript-SDK (1.32) MCP server over stdio for tapedeck's tests: a tool
// "authorize" that asks the client for a URL-mode elicitation
// (elicitation/create with mode "url" and elicitationId "auth-1") and, once
// the client accepts, announces the out-of-band flow's end with
// notifications/elicitation/complete (the SDK's
// createElicitationCompletionNotifier) before it answers.
//
//   node urlelicitserver.mjs PEERS     (PEERS: the .peers directory)
//
// The SDK is resolved from PEERS: a stdio client passes the server only a
// few environment variables.
import { createRequire } from "node:module";
import path from "node:path";

const peers = process.argv[2] ?? process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("usage: urlelicitserver.mjs PEERS");
  process.exit(2);
}
const require = createRequire(path.resolve(peers, "package.json"));
const sdk = (p) => import(require.resolve("@modelcontextprotocol/sdk/" + p));
const { McpServer } = await sdk("server/mcp.js");
const { StdioServerTransport } = await sdk("server/stdio.js");

const server = new McpServer({ name: "url-elicit-server", version: "1.32.2" });
const id = "auth-1";
server.registerTool("authorize", { description: "Asks the user to authorize in a browser (URL-mode elicitation)" }, async () => {
  const r = await server.server.elicitInput({ mode: "url", url: "https://example.com/authorize", message: "Authorize tapedeck", elicitationId: id });
  if (r.action !== "accept") return { content: [{ type: "text", text: `not authorized: ${r.action}` }], isError: true };
  await server.server.createElicitationCompletionNotifier(id)();
  return { content: [{ type: "text", text: `authorized (${id})` }] };
});
await server.connect(new StdioServerTransport());
