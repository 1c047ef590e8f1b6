// A 2026-07-28 MCP server on the v2 TypeScript SDK (@modelcontextprotocol/server)
// over Streamable HTTP (createMcpHandler behind node:http), for tapedeck's
// tests: a tool "deploy" whose "region" argument is mirrored in the
// Mcp-Param-Region header (x-mcp-header), a prompt "greet", and a tool
// "touch" that announces a tools and a prompts list change to the
// subscriptions/listen streams.
//
//   node v2httpserver.mjs PORT     (prints "listening http://127.0.0.1:PORT/mcp")
//
// The SDK is resolved from the directory in TAPEDECK_PEERS (.peers/).
import { createRequire } from "node:module";
import http from "node:http";
import path from "node:path";

const peers = process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("v2httpserver.mjs: TAPEDECK_PEERS must name the .peers directory");
  process.exit(2);
}
const require = createRequire(path.join(peers, "package.json"));
const { McpServer, createMcpHandler, fromJsonSchema } = await import(require.resolve("@modelcontextprotocol/server"));

let handler;
handler = createMcpHandler(() => {
  const server = new McpServer({ name: "v2-http-server", version: "2.4.0" }, { capabilities: { tools: { listChanged: true }, prompts: { listChanged: true } } });
  server.registerTool("deploy", {
    description: "Deploys to a region",
    inputSchema: fromJsonSchema({
      type: "object",
      properties: { region: { type: "string", "x-mcp-header": "Region" }, app: { type: "string" } },
      required: ["region", "app"],
    }),
  }, async ({ region, app }) => ({ content: [{ type: "text", text: `deployed ${app} to ${region}` }] }));
  server.registerPrompt("greet", { description: "A greeting" }, async () => ({
    messages: [{ role: "user", content: { type: "text", text: "hello" } }],
  }));
  server.registerTool("touch", { description: "Announces a tools and a prompts list change" }, async () => {
    handler.notify.toolsChanged();
    handler.notify.promptsChanged();
    return { content: [{ type: "text", text: "touched" }] };
  });
  return server;
}, { legacy: "reject" });

const srv = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = chunks.length ? Buffer.concat(chunks) : undefined;
  const ac = new AbortController();
  res.on("close", () => ac.abort());
  const request = new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method, headers: req.headers, body: req.method === "GET" || req.method === "HEAD" ? undefined : body, signal: ac.signal,
  });
  const response = await handler.fetch(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) return res.end();
  try {
    for await (const chunk of response.body) res.write(chunk);
  } catch {}
  res.end();
});
srv.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => {
  console.log(`listening http://127.0.0.1:${srv.address().port}/mcp`);
});
