// A 2026-07-28 MCP server on the v2 TypeScript SDK (@modelcontextprotocol/server)
// for tapedeck's tests: two tools over stdio, deterministic answers.
//
//   node v2server.mjs
//
// The SDK is resolved from the directory in TAPEDECK_PEERS (.peers/).
import { createRequire } from "node:module";
import path from "node:path";

const peers = process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("v2server.mjs: TAPEDECK_PEERS must name the .peers directory");
  process.exit(2);
}
const require = createRequire(path.join(peers, "package.json"));
const { McpServer } = await import(require.resolve("@modelcontextprotocol/server"));
const { serveStdio } = await import(require.resolve("@modelcontextprotocol/server/stdio"));
const { z } = await import(require.resolve("zod"));

serveStdio(() => {
  const server = new McpServer({ name: "v2-server", version: "2.4.0" }, { capabilities: { tools: {} } });
  server.registerTool("echo", { description: "Echoes its message", inputSchema: z.object({ message: z.string() }) },
    async ({ message }) => ({ content: [{ type: "text", text: `echo: ${message}` }] }));
  server.registerTool("add", { description: "Adds two numbers", inputSchema: z.object({ a: z.number(), b: z.number() }) },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }));
  return server;
});
