// The TypeScript SDK's own client (`@modelcontextprotocol/sdk`, as the MCP Inspector and the
// hosts built on it run it), driven by a test one command a line on stdin, each answer a JSON
// line on stdout.
//
//   node ts_client.mjs SDK_DIR URL
//
// Commands: {"id", "op": "list"} | {"id", "op": "call", "name", "arguments", "timeout"}
// | {"id", "op": "stream", "name", "arguments", "timeout"} (the SDK's task-aware
// `callToolStream`: one line per step, then the end) | {"id", "op": "read", "uri"}
// | {"id", "op": "close"}. Answers: {"id", "ok": true, ...} or {"id", "ok": false, "code",
// "message"} (the error the SDK threw: its JSON-RPC code when it has one). What the server
// sends unasked is {"note": "log", "params"}.
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const [sdkDir, url] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(join(sdkDir, "dist/esm", path)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { LoggingMessageNotificationSchema } = await load("types.js");

const say = (line) => process.stdout.write(JSON.stringify(line) + "\n");
const failure = (id, error) => ({
  id,
  ok: false,
  code: typeof error?.code === "number" ? error.code : null,
  message: String(error?.message ?? error),
});

const client = new Client({ name: "lineup-ts-test", version: "1.0.0" });
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) =>
  say({ note: "log", params: n.params }),
);
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
say({ ready: true, server: client.getServerCapabilities() });

async function run(command) {
  const { id, op } = command;
  const options = command.timeout ? { timeout: command.timeout } : undefined;
  try {
    if (op === "list") {
      say({ id, ok: true, result: await client.listTools() });
    } else if (op === "call") {
      const params = { name: command.name, arguments: command.arguments };
      say({ id, ok: true, result: await client.callTool(params, undefined, options) });
    } else if (op === "stream") {
      const params = { name: command.name, arguments: command.arguments };
      const started = Date.now();
      const steps = client.experimental.tasks.callToolStream(params, undefined, options);
      for await (const step of steps) {
        const elapsed = Date.now() - started;
        if (step.type === "error") {
          say({ ...failure(id, step.error), elapsed });
          return;
        }
        say({ id, step: step.type, ...step, elapsed });
        if (step.type === "result") {
          say({ id, ok: true, result: step.result, elapsed });
          return;
        }
      }
      say({ id, ok: false, code: null, message: "the stream ended without a result" });
    } else if (op === "cancel") {
      say({ id, ok: true, result: await client.experimental.tasks.cancelTask(command.taskId) });
    } else if (op === "tasks") {
      say({ id, ok: true, result: await client.experimental.tasks.listTasks() });
    } else if (op === "read") {
      say({ id, ok: true, result: await client.readResource({ uri: command.uri }) });
    } else if (op === "close") {
      await client.close();
      say({ id, ok: true });
      process.exit(0);
    } else {
      say({ id, ok: false, code: null, message: `unknown op ${op}` });
    }
  } catch (error) {
    say(failure(id, error));
  }
}

// Each command runs at once (a long call does not hold the next one up).
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim()) void run(JSON.parse(line));
}
await client.close();
