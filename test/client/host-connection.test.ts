/**
 * The socket and one connection to the host: where the client finds the socket (as the state
 * layer does), and `connectHost` against the socket responder in fixtures/: no socket, a stale
 * one, answers out of order, a silent host's deadline, a host that closes or sends garbage, frame
 * limits and back-pressure. What a caller gets on top (receipts, retries) is host-client.test.ts's.
 */
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import net from "node:net";
import { connectHost, type HostConnection } from "../../src/client/host-connection.ts";
import { receiptOf } from "../../src/client/command-receipt.ts";
import { clientStateDir, hostSocketPath } from "../../src/client/socket-path.ts";
import { resolveStateDir } from "../../src/state/store.ts";
import { HostUnavailableError, ProtocolRejectedError } from "../../src/protocol/failures.ts";
import { failureResponse, successResponse } from "../../src/protocol/host-response.ts";
import { MAX_FRAME_BYTES } from "../../src/protocol/framing.ts";
import {
  answerStatus,
  FAKE_EPOCH,
  type FakeHost,
  type Handler,
  HOST_STATUS_RECEIPT,
  startFakeHost,
} from "./fixtures/fake-host-server.ts";

let dir: string;
let socketPath: string;
let host: FakeHost | undefined;
const connections: HostConnection[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "piw-client-"));
  socketPath = hostSocketPath(dir);
});

afterEach(async () => {
  for (const connection of connections.splice(0)) connection.close();
  await host?.close();
  host = undefined;
  rmSync(dir, { recursive: true, force: true });
});

async function serve(handler: Handler = answerStatus) {
  host = await startFakeHost(socketPath, handler);
  return host;
}

async function connect(options: Parameters<typeof connectHost>[1] = {}) {
  const connection = await connectHost(socketPath, options);
  connections.push(connection);
  return connection;
}

describe("socket path", () => {
  test("the client finds the state directory exactly as the state layer does", () => {
    const envs = [
      { PI_WORKFLOWS_STATE_DIR: "/a/b" },
      { PI_CODING_AGENT_DIR: "/agent" },
      { PI_WORKFLOWS_STATE_DIR: "", PI_CODING_AGENT_DIR: "/agent" },
      {},
    ];
    for (const env of envs) expect(clientStateDir(env)).toBe(resolveStateDir(env));
    expect(hostSocketPath("/s")).toBe("/s/host.sock");
  });

  test("a relative PI_WORKFLOWS_STATE_DIR is refused; a relative agent dir is made absolute", () => {
    // Resolved against each working directory, a relative state directory would name another
    // one (another host, other runs) from every project.
    for (const dir of ["rel/state", "~/state"]) {
      const env = { PI_WORKFLOWS_STATE_DIR: dir };
      expect(() => clientStateDir(env)).toThrow(
        new RegExp(`^Invalid PI_WORKFLOWS_STATE_DIR '${dir.replace("~", "\\~")}': `),
      );
      expect(() => resolveStateDir(env)).toThrow(/^Invalid PI_WORKFLOWS_STATE_DIR/);
    }
    const agent = { PI_CODING_AGENT_DIR: "agent" };
    expect(resolveStateDir(agent)).toBe(clientStateDir(agent));
    expect(resolveStateDir(agent)).toBe(join(process.cwd(), "agent", "workflows"));
  });
});

describe("connectHost()", () => {
  test("no socket: HostUnavailableError that says how to start the host", async () => {
    const error = await connectHost(socketPath).catch((e) => e);
    expect(error).toBeInstanceOf(HostUnavailableError);
    expect(error.message).toMatch(/not running.*pi-workflows host start/);
  });

  test("a stale socket left by a killed process: refused, reported as unavailable", async () => {
    const stale = join(dir, "stale.sock");
    const child = spawn(process.execPath, [
      "-e",
      `require("node:net").createServer().listen(${
        JSON.stringify(stale)
      }, () => console.log("up"))`,
    ], { stdio: ["ignore", "pipe", "ignore"] });
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout!.once("data", () => resolve());
        child.once("exit", () => reject(new Error("listener exited early")));
      });
      child.kill("SIGKILL");
      await new Promise<void>((resolve) => child.once("exit", () => resolve()));
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    expect(existsSync(stale)).toBe(true);
    const error = await connectHost(stale).catch((e) => e);
    expect(error).toBeInstanceOf(HostUnavailableError);
    expect(error.message).toMatch(/refuses connections/);
  });

  test("several requests in flight are matched to their answers out of order", async () => {
    const held: { request: { requestId: string; runId?: string }; socket: net.Socket }[] = [];
    await serve((request, socket) => {
      held.push({ request, socket });
      if (held.length < 3) return null;
      // Answer all three in reverse order once the third arrives.
      for (const h of held.reverse()) {
        const response = successResponse({
          requestId: h.request.requestId,
          hostEpoch: FAKE_EPOCH,
          receipt: { echo: h.request.runId ?? null },
        });
        h.socket.write(`${JSON.stringify(response)}\n`);
      }
      return null;
    });
    const connection = await connect();
    const answers = await Promise.all(
      ["run-a", "run-b", "run-c"].map((runId) =>
        connection.request("run.status", { runId, payload: {} })
      ),
    );
    expect(answers.map((a) => a.receipt?.echo)).toEqual(["run-a", "run-b", "run-c"]);
    expect(connection.hostEpoch).toBe(FAKE_EPOCH);
  });

  test("a silent host fails the request at its deadline, the connection stays usable", async () => {
    await serve((
      request,
    ) => (request.operation === "run.status" ? null : answerStatus(request, null!)));
    const connection = await connect();
    const started = Date.now();
    const error = await connection.request("run.status", { runId: "r", timeoutMs: 150 })
      .catch((e) => e);
    expect(error).toBeInstanceOf(HostUnavailableError);
    expect(error.message).toMatch(/no answer to run.status within 150 ms/);
    expect(Date.now() - started).toBeLessThan(5_000);
    const status = await connection.request("host.status");
    expect(receiptOf("host.status", status)).toEqual(HOST_STATUS_RECEIPT);
  });

  test("the host closing mid-request fails every pending request as unavailable", async () => {
    await serve((_request, socket) => {
      socket.destroy();
      return null;
    });
    const connection = await connect();
    const error = await connection.request("host.status").catch((e) => e);
    expect(error).toBeInstanceOf(HostUnavailableError);
    expect(connection.closed).toBe(true);
    await expect(connection.request("host.status")).rejects.toBeInstanceOf(HostUnavailableError);
  });

  test("garbage from the host is a protocol rejection, not a hang", async () => {
    await serve((_request, socket) => {
      socket.write("this is not json\n");
      return null;
    });
    const connection = await connect();
    const error = await connection.request("host.status").catch((e) => e);
    expect(error).toBeInstanceOf(ProtocolRejectedError);
    expect(error.code).toBe("invalidJson");
  });

  test("a response that breaks the schema is a protocol rejection", async () => {
    await serve((request, socket) => {
      socket.write(`${JSON.stringify({ requestId: request.requestId, outcome: "maybe" })}\n`);
      return null;
    });
    const connection = await connect();
    const error = await connection.request("host.status").catch((e) => e);
    expect(error).toBeInstanceOf(ProtocolRejectedError);
    expect(error.message).toMatch(/schema/);
  });

  test("an unattributable rejection from the host fails pending requests with its reason", async () => {
    await serve((request) =>
      request.operation === "run.list"
        ? failureResponse({
          requestId: null,
          hostEpoch: FAKE_EPOCH,
          outcome: "rejected",
          code: "invalidJson",
          message: "Frame invalid: the line is not JSON",
        })
        : null
    );
    const connection = await connect();
    const waiting = connection.request("run.status", { runId: "r-1" }).catch((e) => e);
    const listing = await connection.request("run.list").catch((e) => e);
    expect(listing).toBeInstanceOf(ProtocolRejectedError);
    expect(listing.code).toBe("invalidJson");
    expect(await waiting).toBeInstanceOf(ProtocolRejectedError);
    expect(connection.closed).toBe(true);
  });

  test("a request past 1 MiB is refused before it is sent", async () => {
    await serve();
    const connection = await connect();
    const error = await connection.request("run.start", {
      payload: { workflow: "w", cwd: "/p", input: "x".repeat(MAX_FRAME_BYTES) },
    }).catch((e) => e);
    expect(error).toBeInstanceOf(ProtocolRejectedError);
    expect(error.code).toBe("frameTooLarge");
    expect(host!.seen).toEqual([]);
    expect(receiptOf("host.status", await connection.request("host.status")).epoch).toBe(
      FAKE_EPOCH,
    );
  });

  test("a request JSON cannot hold is refused before it is sent, not as an unavailable host", async () => {
    // A HostUnavailableError here was retried by the client for its whole deadline (60 s).
    await serve();
    const connection = await connect();
    const error = await connection.request("run.start", {
      payload: { workflow: "w", cwd: "/p", input: { n: Infinity } },
    }).catch((e) => e);
    expect(error).toBeInstanceOf(ProtocolRejectedError);
    expect(error.code).toBe("notJson");
    expect(error.message).toContain(
      "the request was not sent: Value is not JSON at $.payload.input.n: number Infinity is not finite",
    );
    expect(host!.seen).toEqual([]);
    expect(connection.closed).toBe(false);
  });

  test("a burst of requests to a host that reads nothing yet holds no listener per request", async () => {
    const held: net.Socket[] = [];
    // Registered after the fake host's own handler: the host's side reads nothing until resumed.
    (await serve()).server.on("connection", (socket) => held.push(socket.pause()));
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const connection = await connect();
      const input = "x".repeat(100 * 1024);
      // 40 frames of 100 KiB fill the socket's buffers many times over.
      const answers = Array.from(
        { length: 40 },
        () => connection.request("run.start", { payload: { workflow: "w", cwd: "/p", input } }),
      );
      for (const socket of held) socket.resume();
      const outcomes = await Promise.all(answers);
      expect(outcomes.map((a) => a.error?.code)).toEqual(Array(40).fill("notAvailable"));
      expect(host!.seen).toHaveLength(40);
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.map((w) => w.name)).not.toContain("MaxListenersExceededWarning");
  });

  test("the host's own validation error comes back attributed to the request", async () => {
    await serve();
    const connection = await connect();
    const response = await connection.request("run.start", {
      // deno-lint-ignore no-explicit-any
      payload: { workflow: "w", cwd: "relative" } as any,
    });
    expect(response.outcome).toBe("rejected");
    expect(response.error?.message).toMatch(/^payload\.cwd: /);
  });
});
