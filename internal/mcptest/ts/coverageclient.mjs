// A TypeScript-SDK (1.32) MCP client for tapedeck's coverage fixture: one
// session against server-everything that exercises the methods and
// notifications the other fixtures do not, and prints a transcript with no
// times and no random ids, so that a live run and a replayed one compare.
//
//   node coverageclient.mjs --stdio COMMAND [ARG...]
//
// In order: ping; roots (the server asks roots/list after initialize, and
// again after notifications/roots/list_changed); logging/setLevel;
// resources/templates/list; completion/complete; resources/subscribe, the
// server's notifications/resources/updated (toggle-subscriber-updates),
// resources/unsubscribe; a session resource registered by
// gzip-file-as-resource (notifications/resources/list_changed);
// elicitation/create (form mode, declined; URL mode, accepted); a research
// task listed (tasks/list) and cancelled (tasks/cancel); a long-running
// call cancelled by the client (notifications/cancelled).
//
// The SDK is resolved from the directory in TAPEDECK_PEERS (.peers/).
import { createRequire } from "node:module";
import path from "node:path";

const peers = process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("coverageclient.mjs: TAPEDECK_PEERS must name the .peers directory");
  process.exit(2);
}
const require = createRequire(path.join(peers, "package.json"));
const sdk = (p) => import(require.resolve("@modelcontextprotocol/sdk/" + p));
const { Client } = await sdk("client/index.js");
const types = await sdk("types.js");

const args = process.argv.slice(2);
if (args[0] !== "--stdio" || args.length < 2) {
  console.error("usage: coverageclient.mjs --stdio COMMAND [ARG...]");
  process.exit(2);
}
const { StdioClientTransport } = await sdk("client/stdio.js");
const transport = new StdioClientTransport({ command: args[1], args: args.slice(2), stderr: "ignore" });

const out = (s) => process.stdout.write(s + "\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (r) => (r.content ?? []).map((c) => c.text ?? c.type).join(" | ");
const mask = (s) => s.replace(/[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<id>");

const client = new Client(
  { name: "ts-coverage-client", version: "1.0.0" },
  { capabilities: { roots: { listChanged: true }, elicitation: { form: {}, url: {} }, tasks: { list: {}, cancel: {} } } },
);
let roots = [{ uri: "file:///tmp/tapedeck-a", name: "a" }];
let rootsAsked = 0;
client.setRequestHandler(types.ListRootsRequestSchema, async () => {
  rootsAsked++;
  return { roots };
});
const elicited = [];
client.setRequestHandler(types.ElicitRequestSchema, async (request) => {
  const p = request.params;
  elicited.push(p.mode ?? "form");
  if (p.mode === "url") return { action: "accept" };
  return { action: "decline" };
});
const updated = [];
client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, async (n) => { updated.push(n.params.uri); });
let resourcesChanged = 0;
client.setNotificationHandler(types.ResourceListChangedNotificationSchema, async () => { resourcesChanged++; });
// Log lines: counted, not printed (the server's texts name sessions).
let logged = 0;
client.setNotificationHandler(types.LoggingMessageNotificationSchema, async () => { logged++; });

async function until(what, ok) {
  for (let i = 0; i < 100 && !ok(); i++) await sleep(20);
  if (!ok()) throw new Error(`timed out waiting for ${what}`);
}

try {
  await client.connect(transport);
  out(`init: server ${client.getServerVersion()?.name}`);
  // The server asks roots/list 350 ms after initialized.
  await until("roots/list", () => rootsAsked >= 1);
  await sleep(100);
  out(`roots: asked ${rootsAsked}`);
  out(`ping: ${JSON.stringify(await client.ping())}`);

  roots = [...roots, { uri: "file:///tmp/tapedeck-b", name: "b" }];
  await client.sendRootsListChanged();
  await until("roots/list after list_changed", () => rootsAsked >= 2);
  await sleep(100);
  out(`roots: asked ${rootsAsked} after list_changed`);
  out(`get-roots-list: ${text(await client.callTool({ name: "get-roots-list", arguments: {} })).split("\n")[0]}`);

  await client.setLoggingLevel("info");
  out("setLevel: info");

  const templates = await client.listResourceTemplates();
  out(`templates: ${templates.resourceTemplates.map((t) => t.uriTemplate).sort().join(" ")}`);

  const completion = await client.complete({ ref: { type: "ref/prompt", name: "completable-prompt" }, argument: { name: "department", value: "S" } });
  out(`complete: ${completion.completion.values.join(" ")}`);

  const uri = "demo://resource/dynamic/text/1";
  await client.subscribeResource({ uri });
  out(`subscribe: ${uri}`);
  out(`toggle: ${mask(text(await client.callTool({ name: "toggle-subscriber-updates", arguments: {} }))).split(" for session")[0]}`);
  await until("notifications/resources/updated", () => updated.length >= 1);
  out(`updated: ${updated[0]}`);
  out(`toggle: ${text(await client.callTool({ name: "toggle-subscriber-updates", arguments: {} })).split(" for session")[0]}`);
  await client.unsubscribeResource({ uri });
  out(`unsubscribe: ${uri}`);

  const gz = await client.callTool({ name: "gzip-file-as-resource", arguments: { name: "hello.txt.gz", data: "data:text/plain;base64,aGVsbG8gdGFwZWRlY2sK" } });
  await until("notifications/resources/list_changed", () => resourcesChanged >= 1);
  out(`gzip: ${(gz.content ?? []).map((c) => c.type === "resource_link" ? c.uri : c.type).join(" ")}; resources list_changed`);

  const form = await client.callTool({ name: "trigger-elicitation-request", arguments: {} });
  out(`elicit form: ${text(form).split("\n")[0]}`);
  const url = await client.callTool({ name: "trigger-url-elicitation", arguments: { url: "https://example.com/consent", elicitationId: "tapedeck-1" } });
  out(`elicit url: ${text(url).split("\n")[0]}`);
  out(`elicited: ${elicited.join(" ")}`);

  const created = await client.request(
    { method: "tools/call", params: { name: "simulate-research-query", arguments: { topic: "coverage" }, task: { ttl: 60000 } } },
    types.CreateTaskResultSchema,
  );
  const id = created.task.taskId;
  const listed = await client.experimental.tasks.listTasks();
  out(`tasks/list: ${listed.tasks.filter((t) => t.taskId === id).length} of ours, ${listed.tasks[0]?.status}`);
  const cancelled = await client.experimental.tasks.cancelTask(id);
  out(`tasks/cancel: ${cancelled.status}`);

  const ac = new AbortController();
  const slow = client.callTool({ name: "trigger-long-running-operation", arguments: { duration: 2, steps: 2 } }, undefined, { signal: ac.signal });
  await sleep(200);
  ac.abort("tapedeck coverage");
  out(`cancelled: ${await slow.then(() => "answered", (e) => (e.name === "AbortError" || /abort/i.test(String(e)) ? "aborted" : e.message))}`);
  await sleep(100);
  out(`echo: ${text(await client.callTool({ name: "echo", arguments: { message: "after cancel" } }))}`);
  out(`logged: ${logged > 0 ? "some" : "none"}`);
  await client.close();
} catch (e) {
  out(`error: ${e.message}`);
  process.exitCode = 1;
  await client.close().catch(() => {});
}
