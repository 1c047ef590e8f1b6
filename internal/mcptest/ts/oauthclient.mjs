// A TypeScript-SDK MCP client with an OAuth authProvider for tapedeck's
// tests: dynamic client registration, an authorize step approved at once
// (it fetches the authorization URL, takes the code from the redirect
// without following it), the token exchange with PKCE, then a fixed script.
// It prints a deterministic transcript on stdout, and on stderr every
// secret the run used ("secret: VALUE": the code, the PKCE verifier, the
// client secret, the access and refresh tokens), so a test can look for
// them on a tape.
//
//   node oauthclient.mjs http://127.0.0.1:PORT/mcp
//
// The SDK is resolved from the directory in TAPEDECK_PEERS (.peers/).
import { createRequire } from "node:module";
import path from "node:path";

const peers = process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("oauthclient.mjs: TAPEDECK_PEERS must name the .peers directory");
  process.exit(2);
}
const require = createRequire(path.join(peers, "package.json"));
const sdk = (p) => import(require.resolve("@modelcontextprotocol/sdk/" + p));
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { UnauthorizedError } = await sdk("client/auth.js");

const out = (s) => process.stdout.write(s + "\n");
const secret = (s) => s && process.stderr.write(`secret: ${s}\n`);
const callback = "http://127.0.0.1:9/callback"; // never fetched: the code is read from the redirect

class AutoApproveProvider {
  constructor() {
    this.code = undefined;
  }
  get redirectUrl() {
    return callback;
  }
  get clientMetadata() {
    return {
      client_name: "tapedeck oauth test",
      redirect_uris: [callback],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_post",
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info) {
    this.info = info;
    secret(info.client_secret);
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
    secret(tokens.access_token);
    secret(tokens.refresh_token);
  }
  async redirectToAuthorization(url) {
    const resp = await fetch(url, { redirect: "manual" });
    const location = resp.headers.get("location");
    if (!location) throw new Error(`authorize answered ${resp.status} without a redirect`);
    const back = new URL(location);
    this.code = back.searchParams.get("code");
    if (!this.code) throw new Error(`authorize redirected without a code: ${back.search}`);
    secret(this.code);
    out(`authorize: redirected to the callback with a code and state ${back.searchParams.has("state")}`);
  }
  saveCodeVerifier(v) {
    this.verifier = v;
    secret(v);
  }
  codeVerifier() {
    return this.verifier;
  }
}

const url = new URL(process.argv[2]);
const provider = new AutoApproveProvider();
let client;
try {
  for (let attempt = 0; ; attempt++) {
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    client = new Client({ name: "ts-oauth-client", version: "1.0.0" });
    try {
      await client.connect(transport);
      break;
    } catch (e) {
      if (!(e instanceof UnauthorizedError) || attempt > 0 || !provider.code) throw e;
      out("connect: unauthorized, authorizing");
      await transport.finishAuth(provider.code);
      out(`token: ${provider.saved?.token_type?.toLowerCase()} with scope "${provider.saved?.scope ?? ""}"`);
    }
  }
  out(`init: server ${client.getServerVersion()?.name}`);
  const tools = await client.listTools();
  out(`tools: ${tools.tools.map((t) => t.name).sort().join(" ")}`);
  const r = await client.callTool({ name: "greet", arguments: { name: "tapedeck" } });
  out(`greet: ${(r.content ?? []).map((c) => c.text).join(" | ")}`);
  await client.close();
} catch (e) {
  out(`error: ${e.message}`);
  process.exitCode = 1;
  await client?.close().catch(() => {});
}
