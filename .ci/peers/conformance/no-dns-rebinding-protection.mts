// Vendored from github.com/modelcontextprotocol/conformance at v0.1.16
// (commit 21a9a2f), examples/servers/typescript/no-dns-rebinding-protection.ts, licensed under
// MIT / Apache-2.0 like that repository. The npm package ships no servers,
// and its server scenarios call the tools, resources and prompts this one
// registers. Changes for tapedeck's tests (.ci/peers.sh copies this file
// into .peers/conformance/, so its imports resolve from .peers/node_modules,
// and Node 22 runs it by stripping its types):
//   - its echo tool's inputSchema is a zod shape: SDK 1.32 refuses the
//     plain JSON object it had (every request got 500);
//   - it listens on 127.0.0.1 at PORT (0: any free port) and prints the
//     port it was given, so a test reads the URL back.

/**
 * MCP Server WITHOUT DNS Rebinding Protection - Negative Test Case
 *
 * This is the simplest possible vulnerable server to demonstrate what happens
 * when DNS rebinding protection is omitted. DO NOT use this pattern in production.
 *
 * This server should FAIL the dns-rebinding-protection conformance scenario.
 */

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import express from 'express';
import { z } from 'zod';

// Create a fresh MCP server per request to avoid "Already connected" errors
// after the v1.26.0 security fix (GHSA-345p-7cg4-v4c7)
function createMcpServer() {
  const server = new McpServer({
    name: 'no-dns-rebinding-protection-server',
    version: '1.0.0'
  });

  server.registerTool(
    'echo',
    {
      description: 'Echo the input back',
      inputSchema: { message: z.string() }
    },
    async ({ message }) => ({
      content: [{ type: 'text', text: `Echo: ${message}` }]
    })
  );

  return server;
}

// === VULNERABLE EXPRESS APP ===
// This intentionally does NOT use createMcpExpressApp() or localhostHostValidation()
const app = express();
app.use(express.json());
// NO DNS rebinding protection middleware here!

app.post('/mcp', async (req, res) => {
  try {
    const server = createMcpServer();
    // Stateless: no session ID
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  } catch (error) {
    if (!res.headersSent) {
      res.status(500).json({
        jsonrpc: '2.0',
        error: {
          code: -32603,
          message: `Internal error: ${error instanceof Error ? error.message : String(error)}`
        },
        id: null
      });
    }
  }
});

const PORT = parseInt(process.env.PORT || '3003', 10);
const httpServer = app.listen(PORT, '127.0.0.1', () => {
  const port = (httpServer.address() as { port: number }).port;
  console.log(`Vulnerable server running on http://localhost:${port}/mcp`);
  console.log(`WARNING: No DNS rebinding protection enabled!`);
});
