// An OAuth-protected MCP server for tapedeck's tests: the TypeScript SDK's
// OAuth demo (examples/server/simpleStreamableHttp.js --oauth) rebuilt from
// the same SDK pieces, with the demo's own in-memory authorization server
// (DemoInMemoryAuthProvider: dynamic registration, authorize that approves
// at once, token with PKCE), on loopback ports the system picks. The demo
// itself builds its URLs from MCP_PORT and MCP_AUTH_PORT before it listens
// (port 0 would make them say ":0"), so it needs fixed ports; this script
// listens first and builds the URLs from the bound ports.
//
//   node oauthserver.mjs
//
// prints "oauthserver: mcp http://127.0.0.1:P/mcp auth http://127.0.0.1:Q"
// once both listen. The SDK is resolved from TAPEDECK_PEERS (.peers/).
import { createRequire } from "node:module";
import { randomUUID } from "node:crypto";
import path from "node:path";

const peers = process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("oauthserver.mjs: TAPEDECK_PEERS must name the .peers directory");
  process.exit(2);
}
const require = createRequire(path.join(peers, "package.json"));
const sdk = (p) => import(require.resolve("@modelcontextprotocol/sdk/" + p));
const express = require("express");
const { McpServer } = await sdk("server/mcp.js");
const { StreamableHTTPServerTransport } = await sdk("server/streamableHttp.js");
const { mcpAuthRouter, mcpAuthMetadataRouter, createOAuthMetadata, getOAuthProtectedResourceMetadataUrl } = await sdk("server/auth/router.js");
const { requireBearerAuth } = await sdk("server/auth/middleware/bearerAuth.js");
const { createMcpExpressApp } = await sdk("server/express.js");
const { DemoInMemoryAuthProvider } = await sdk("examples/server/demoInMemoryOAuthProvider.js");
const { isInitializeRequest } = await sdk("types.js");
const z = require("zod/v4");

const listen = (app) =>
  new Promise((resolve, reject) => {
    const srv = app.listen(0, "127.0.0.1", (err) => (err ? reject(err) : resolve(srv)));
  });

const scopes = ["mcp:tools"];
const provider = new DemoInMemoryAuthProvider();
const authApp = express();
authApp.use(express.json());
authApp.use(express.urlencoded());
const authSrv = await listen(authApp);
const authUrl = new URL(`http://127.0.0.1:${authSrv.address().port}`);
authApp.use(mcpAuthRouter({ provider, issuerUrl: authUrl, scopesSupported: scopes }));

const app = createMcpExpressApp();
const mcpSrv = await listen(app);
const mcpUrl = new URL(`http://127.0.0.1:${mcpSrv.address().port}/mcp`);
app.use(
  mcpAuthMetadataRouter({
    oauthMetadata: createOAuthMetadata({ provider, issuerUrl: authUrl, scopesSupported: scopes }),
    resourceServerUrl: mcpUrl,
    scopesSupported: scopes,
    resourceName: "MCP Demo Server",
  }),
);
const auth = requireBearerAuth({
  verifier: { verifyAccessToken: (token) => provider.verifyAccessToken(token) },
  requiredScopes: [],
  resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl),
});

const newServer = () => {
  const server = new McpServer({ name: "oauth-demo", version: "1.0.0" });
  server.registerTool("greet", { description: "Greets someone", inputSchema: { name: z.string() } }, async ({ name }) => ({
    content: [{ type: "text", text: `Hello, ${name}!` }],
  }));
  return server;
};
const sessions = new Map();
app.post("/mcp", auth, async (req, res) => {
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? sessions.get(sid) : undefined;
  if (!transport) {
    if (sid || !isInitializeRequest(req.body)) {
      res.status(400).json({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: No valid session ID provided" }, id: null });
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res, req.body);
});
const bySession = async (req, res) => {
  const transport = sessions.get(req.headers["mcp-session-id"]);
  if (!transport) {
    res.status(400).send("Invalid or missing session ID");
    return;
  }
  await transport.handleRequest(req, res);
};
app.get("/mcp", auth, bySession);
app.delete("/mcp", auth, bySession);

process.stdout.write(`oauthserver: mcp ${mcpUrl.href} auth ${authUrl.href}\n`);
const stop = () => {
  mcpSrv.close();
  authSrv.close();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
