/**
 * A fake OpenAI-compatible model server for real-Pi tests: `POST /v1/chat/completions` on
 * 127.0.0.1:0, answered as a streamed SSE `chat.completion.chunk` sequence the way Pi's
 * `openai-completions` provider parses it. Each request is recorded and answered by a script the
 * test supplies; the server closes itself after a bounded lifetime so a forgotten one cannot
 * outlive its test for long. No network beyond loopback.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** One chat message as Pi sends it (OpenAI chat shape). */
export interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export interface FakeModelRequest {
  /** 0-based order of arrival. */
  index: number;
  /** Wall-clock arrival time in ms with sub-ms precision (comparable with other processes). */
  receivedAt: number;
  model: string;
  messages: ChatMessage[];
  /** Names of the tools the request offered. */
  toolNames: string[];
  /** Role of the final message (`user`, `tool`, ...). */
  lastRole: string;
  /** Text of the last `user` message (Pi's custom messages arrive as `user`). */
  lastUserText: string;
  /** The last tool result, when the final message is one. */
  lastToolResult: string | undefined;
  body: Record<string, unknown>;
  /** What the script answered, once it did. */
  reply?: FakeReply;
  /** Wall-clock time the answer was fully sent (same clock as `receivedAt`). */
  respondedAt?: number;
  /** The request's headers as the provider client sent them (names in lower case). */
  headers: Record<string, string>;
}

/**
 * The usage chunk a reply ends with (OpenAI's streamed `usage`, which Pi prices with the model's
 * `cost` rates from models.json): prompt tokens (cache reads included), completion tokens, and
 * the cached and cache-write parts of the prompt. Default: 10 prompt, 5 completion.
 */
export interface FakeUsage {
  prompt: number;
  completion: number;
  cached?: number;
  cacheWrite?: number;
}

export type FakeReply =
  | { kind: "text"; text: string; usage?: FakeUsage }
  | { kind: "tool"; name: string; args: unknown; callId?: string; usage?: FakeUsage }
  | { kind: "error"; status: number; message: string }
  /** Never answers: the request stays open until Pi gives up on it or the server closes. */
  | { kind: "hang" };

export type FakeScript = (request: FakeModelRequest) => FakeReply | Promise<FakeReply>;

export interface FakeModelOptions {
  script: FakeScript;
  /** The server closes itself after this long (default 5 minutes). */
  lifetimeMs?: number;
  /** Pause between streamed chunks (default 0: each chunk is still its own write). */
  chunkDelayMs?: number;
}

export interface FakeModel {
  /** `http://127.0.0.1:PORT/v1`, what models.json's `baseUrl` needs. */
  readonly baseUrl: string;
  readonly port: number;
  readonly requests: readonly FakeModelRequest[];
  /** Resolves with the first request (at index >= `from`) matching `predicate`. */
  waitForRequest(
    predicate: (request: FakeModelRequest) => boolean,
    options?: { from?: number; timeoutMs?: number },
  ): Promise<FakeModelRequest>;
  close(): Promise<void>;
}

const DEFAULT_LIFETIME_MS = 5 * 60_000;
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export async function startFakeModel(options: FakeModelOptions): Promise<FakeModel> {
  const requests: FakeModelRequest[] = [];
  const waiters = new Set<() => void>();
  const sockets = new Set<Socket>();
  let closed = false;

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: Error) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `fake model: ${error.message}` } }));
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `fake model serves no ${req.url}` } }));
      return;
    }
    const receivedAt = performance.timeOrigin + performance.now();
    const body = JSON.parse(await readBody(req)) as Record<string, unknown>;
    const request = {
      ...describeRequest(requests.length, receivedAt, body),
      headers: Object.fromEntries(
        Object.entries(req.headers).map(([name, value]) => [name, String(value)]),
      ),
    };
    requests.push(request);
    for (const wake of waiters) wake();
    const reply = await options.script(request);
    request.reply = reply;
    if (reply.kind === "hang") {
      await new Promise((resolve) => res.on("close", resolve));
      return;
    }
    if (reply.kind === "error") {
      res.writeHead(reply.status, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: reply.message } }));
      return;
    }
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    for (const chunk of replyChunks(reply, request)) {
      if (res.destroyed) return;
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      if (options.chunkDelayMs) await delay(options.chunkDelayMs);
    }
    res.end("data: [DONE]\n\n");
    request.respondedAt = performance.timeOrigin + performance.now();
  };

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  const close = () => {
    if (closed) return Promise.resolve();
    closed = true;
    clearTimeout(lifetime);
    for (const wake of waiters) wake();
    return new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
  };
  const lifetime = setTimeout(() => void close(), options.lifetimeMs ?? DEFAULT_LIFETIME_MS);
  lifetime.unref();

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    close,
    waitForRequest(predicate, { from = 0, timeoutMs = 30_000 } = {}) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = requests.slice(from).find(predicate);
          if (found) return finish(() => resolve(found));
          if (closed) finish(() => reject(new Error("fake model closed before the request came")));
        };
        const timer = setTimeout(
          () =>
            finish(() =>
              reject(
                new Error(
                  `fake model: no matching request within ${timeoutMs} ms (${requests.length} seen)`,
                ),
              )
            ),
          timeoutMs,
        );
        const finish = (settle: () => void) => {
          clearTimeout(timer);
          waiters.delete(check);
          settle();
        };
        waiters.add(check);
        check();
      });
    },
  };
}

function describeRequest(
  index: number,
  receivedAt: number,
  body: Record<string, unknown>,
): Omit<FakeModelRequest, "headers"> {
  const messages = (Array.isArray(body.messages) ? body.messages : []) as ChatMessage[];
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const last = messages.at(-1);
  const lastUser = messages.findLast((message) => message.role === "user");
  return {
    index,
    receivedAt,
    model: String(body.model ?? ""),
    messages,
    toolNames: tools.map((tool: { function?: { name?: string } }) => tool.function?.name ?? ""),
    lastRole: last?.role ?? "",
    lastUserText: lastUser ? messageText(lastUser) : "",
    lastToolResult: last?.role === "tool" ? messageText(last) : undefined,
    body,
  };
}

/** The text of a message whose content is a string or an array of parts. */
export function messageText(message: ChatMessage): string {
  const content = message.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: { type?: string; text?: string }) => (part.type === "text" ? part.text ?? "" : ""))
    .join("");
}

let callCounter = 0;

function replyChunks(
  reply: Extract<FakeReply, { kind: "text" | "tool" }>,
  request: FakeModelRequest,
): unknown[] {
  const id = `chatcmpl-fake-${request.index}`;
  const chunk = (delta: unknown, finish: string | null = null) => ({
    id,
    object: "chat.completion.chunk",
    model: request.model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const usage = {
    id,
    object: "chat.completion.chunk",
    model: request.model,
    choices: [],
    usage: usageChunk(reply.usage ?? { prompt: 10, completion: 5 }),
  };
  if (reply.kind === "text") {
    return [
      chunk({ role: "assistant", content: "" }),
      ...pieces(reply.text, 40).map((text) => chunk({ content: text })),
      chunk({}, "stop"),
      usage,
    ];
  }
  const callId = reply.callId ?? `call_fake_${++callCounter}`;
  const args = JSON.stringify(reply.args);
  return [
    chunk({
      role: "assistant",
      content: null,
      tool_calls: [{
        index: 0,
        id: callId,
        type: "function",
        function: { name: reply.name, arguments: "" },
      }],
    }),
    ...pieces(args, 200).map((part) =>
      chunk({ tool_calls: [{ index: 0, function: { arguments: part } }] })
    ),
    chunk({}, "tool_calls"),
    usage,
  ];
}

function usageChunk(usage: FakeUsage): Record<string, unknown> {
  return {
    prompt_tokens: usage.prompt,
    completion_tokens: usage.completion,
    total_tokens: usage.prompt + usage.completion,
    ...(usage.cached !== undefined || usage.cacheWrite !== undefined
      ? {
        prompt_tokens_details: {
          cached_tokens: usage.cached ?? 0,
          cache_write_tokens: usage.cacheWrite ?? 0,
        },
      }
      : {}),
  };
}

function pieces(text: string, size: number): string[] {
  if (text === "") return [""];
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error("request body too large"));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
