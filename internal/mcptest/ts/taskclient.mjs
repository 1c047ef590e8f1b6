// A TypeScript-SDK MCP client for tapedeck's task tests: it drives
// server-everything's task tools with the SDK's task APIs and prints a
// transcript with no times and no random ids, so that a live run and a
// replayed one can be compared, however often each polled.
//
//   node taskclient.mjs [--polls N] [--interval MS] [--scenario S] --stdio COMMAND [ARG...]
//   node taskclient.mjs [...] --url http://127.0.0.1:PORT/mcp
//
// Scenarios:
//   research  simulate-research-query as a task: N tasks/get polls every
//             MS milliseconds (stopping early at a terminal status), then
//             tasks/result, then one more tasks/get.
//   sampling  trigger-sampling-request-async: the server sends a sampling
//             request with a task; this client creates the task in its
//             InMemoryTaskStore, completes it after MS milliseconds, and
//             the server polls it (tasks/get, tasks/result) before
//             answering the tool call.
//
// The SDK is resolved from the directory in TAPEDECK_PEERS (.peers/).
import { createRequire } from "node:module";
import path from "node:path";

const peers = process.env.TAPEDECK_PEERS;
if (!peers) {
  console.error("taskclient.mjs: TAPEDECK_PEERS must name the .peers directory");
  process.exit(2);
}
const require = createRequire(path.join(peers, "package.json"));
const sdk = (p) => import(require.resolve("@modelcontextprotocol/sdk/" + p));
const { Client } = await sdk("client/index.js");
const types = await sdk("types.js");
const { InMemoryTaskStore } = await sdk("experimental/tasks/stores/in-memory.js");

let polls = 3, interval = 300, scenario = "research";
const args = process.argv.slice(2);
while (args.length && args[0].startsWith("--") && args[0] !== "--stdio" && args[0] !== "--url") {
  const [flag, value] = args.splice(0, 2);
  if (flag === "--polls") polls = Number(value);
  else if (flag === "--interval") interval = Number(value);
  else if (flag === "--scenario") scenario = value;
  else {
    console.error(`taskclient.mjs: unknown flag ${flag}`);
    process.exit(2);
  }
}
let transport;
if (args[0] === "--stdio") {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  transport = new StdioClientTransport({ command: args[1], args: args.slice(2), stderr: "ignore" });
} else if (args[0] === "--url") {
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(args[1]));
} else {
  console.error("usage: taskclient.mjs [--polls N] [--interval MS] [--scenario research|sampling] --stdio COMMAND [ARG...] | --url URL");
  process.exit(2);
}

const taskStore = new InMemoryTaskStore();
const client = new Client(
  { name: "ts-task-client", version: "1.0.0" },
  {
    capabilities: {
      sampling: {},
      tasks: { list: {}, cancel: {}, requests: { sampling: { createMessage: {} } } },
    },
    taskStore,
  },
);
client.setRequestHandler(types.CreateMessageRequestSchema, async (request, extra) => {
  const answer = { role: "assistant", content: { type: "text", text: "sampled: " + request.params.messages.length + " message(s)" }, model: "scripted" };
  if (!request.params.task) return answer;
  const task = await extra.taskStore.createTask({ ttl: request.params.task.ttl });
  setTimeout(() => extra.taskStore.storeTaskResult(task.taskId, "completed", answer).catch(() => {}), interval);
  return { task };
});

const out = (s) => process.stdout.write(s + "\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (r) => (r.content ?? []).map((c) => c.text ?? c.type).join(" | ");
// Task ids and times are chosen afresh by each run: masked.
const mask = (s) => s.replace(/[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<id>");
const terminal = (s) => s === "completed" || s === "failed" || s === "cancelled";

async function research() {
  const created = await client.request(
    { method: "tools/call", params: { name: "simulate-research-query", arguments: { topic: "tapes" }, task: { ttl: 60000 } } },
    types.CreateTaskResultSchema,
  );
  const id = created.task.taskId;
  out(`created: ${created.task.status}`);
  let n = 0, status = created.task.status;
  while (n < polls && !terminal(status)) {
    await sleep(interval);
    status = (await client.experimental.tasks.getTask(id)).status;
    n++;
  }
  out(`polled: ${n === polls || terminal(status) ? "as asked" : "short"}`);
  const result = await client.experimental.tasks.getTaskResult(id, types.CallToolResultSchema);
  out(`result: ${mask(text(result).split("\n")[0])}`);
  out(`after: ${(await client.experimental.tasks.getTask(id)).status}`);
}

async function sampling() {
  const r = await client.callTool({ name: "trigger-sampling-request-async", arguments: { prompt: "hello", maxTokens: 10 } });
  out(`sampling: ${mask(text(r)).split("\n").filter((l) => !l.startsWith("Poll ")).join(" / ")}`);
}

try {
  await client.connect(transport);
  out(`init: server ${client.getServerVersion()?.name}`);
  if (scenario === "research") await research();
  else if (scenario === "sampling") await sampling();
  else throw new Error(`unknown scenario ${scenario}`);
  await client.close();
} catch (e) {
  out(`error: ${e.message}`);
  process.exitCode = 1;
  await client.close().catch(() => {});
} finally {
  taskStore.cleanup();
}
