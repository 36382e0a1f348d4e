// The pi-workflows headless bridge: a Pi extension the worker loads into its `pi --mode rpc`
// child (`-e <this file>`). It registers the one tool the worker describes (the `workflow` tool
// with only `update` and `submit`) and forwards every call to the worker over file descriptor 3,
// a private pipe the worker opened for this child, waiting for the worker's verdict: the tool
// result (or the tool error a rejected submission becomes) is exactly what the worker answers.
//
// Self-contained on purpose (Node built-ins only): the worker writes this text to a file in the
// user-only state directory, whether it runs from source, the npm bundle or the executable.
// Frames are one JSON object per line, `schema` "pi-workflows.pi-bridge.v1":
//   worker -> bridge  {kind: "hello", tool}            once, first
//   bridge -> worker  {kind: "call", callId, toolCallId, params}
//   worker -> bridge  {kind: "result", callId, ok, text, terminate}
import net from "node:net";

const SCHEMA = "pi-workflows.pi-bridge.v1";
const HELLO_TIMEOUT_MS = 15_000;
const MAX_LINE_BYTES = 8 * 1024 * 1024;

/** @param {any} pi the ExtensionAPI */
export default async function piWorkflowsBridge(pi) {
  const channel = openChannel();
  if (channel === null) return; // not started by a worker: register nothing
  const hello = await channel.hello;
  if (hello === null) return;
  const tool = hello.tool;
  pi.registerTool({
    name: tool.name,
    label: tool.label,
    description: tool.description,
    promptSnippet: tool.promptSnippet,
    promptGuidelines: tool.promptGuidelines,
    parameters: tool.parameters,
    async execute(toolCallId, params) {
      const reply = await channel.call(toolCallId, params);
      return {
        content: [{ type: "text", text: reply.text }],
        details: {},
        isError: reply.ok !== true,
        terminate: reply.ok === true && reply.terminate === true,
      };
    },
  });
}

function openChannel() {
  let socket;
  try {
    socket = new net.Socket({ fd: 3, readable: true, writable: true });
  } catch {
    return null;
  }
  /** @type {Map<string, (reply: any) => void>} */
  const pending = new Map();
  let resolveHello = (/** @type {any} */ _value) => {};
  const hello = new Promise((resolve) => {
    resolveHello = resolve;
  });
  // Pi awaits this factory before it reads stdin: the pipe and the timer keep it alive until the
  // hello arrives; after that the pipe must never keep Pi alive on its own.
  const helloTimer = setTimeout(() => resolveHello(null), HELLO_TIMEOUT_MS);
  hello.then(() => socket.unref());
  let buffered = "";
  const fail = (/** @type {string} */ text) => {
    clearTimeout(helloTimer);
    resolveHello(null);
    for (const settle of pending.values()) settle({ ok: false, text });
    pending.clear();
  };
  socket.setEncoding("utf8");
  socket.on("data", (/** @type {string} */ chunk) => {
    buffered += chunk;
    if (buffered.length > MAX_LINE_BYTES) {
      fail("The workflow bridge received an oversized message");
      socket.destroy();
      return;
    }
    let newline;
    while ((newline = buffered.indexOf("\n")) !== -1) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      let frame;
      try {
        frame = JSON.parse(line);
      } catch {
        continue;
      }
      if (frame?.schema !== SCHEMA) continue;
      if (frame.kind === "hello") {
        clearTimeout(helloTimer);
        resolveHello(frame);
      } else if (frame.kind === "result") {
        const settle = pending.get(frame.callId);
        pending.delete(frame.callId);
        settle?.(frame);
      }
    }
  });
  socket.on("error", () => fail("The workflow bridge lost its worker"));
  socket.on("close", () => fail("The workflow bridge lost its worker"));
  let calls = 0;
  return {
    hello,
    /** @returns {Promise<{ok: boolean, text: string, terminate?: boolean}>} */
    call(/** @type {string} */ toolCallId, /** @type {unknown} */ params) {
      const callId = `call-${++calls}`;
      return new Promise((resolve) => {
        if (socket.destroyed) {
          resolve({ ok: false, text: "The workflow bridge lost its worker" });
          return;
        }
        pending.set(callId, resolve);
        socket.write(
          `${JSON.stringify({ schema: SCHEMA, kind: "call", callId, toolCallId, params })}\n`,
        );
      });
    },
  };
}
