import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import net from "node:net";
import { connectHost, type HostConnection } from "../../src/client/host-connection.ts";
import { HostCommandError, receiptOf } from "../../src/client/command-receipt.ts";
import { createHostClient } from "../../src/client/host-client.ts";
import { checkCommand } from "../../src/client/check-command.ts";
import type { HostOperation } from "../../src/protocol/host-operations.ts";
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

describe("receiptOf()", () => {
  test("typed receipt on success, HostCommandError with outcome and revision otherwise", () => {
    const ok = successResponse({ requestId: "r", hostEpoch: 1, receipt: { stopping: true } });
    expect(receiptOf("host.stop", ok)).toEqual({ stopping: true });
    const conflict = failureResponse({
      requestId: "r",
      hostEpoch: 1,
      outcome: "conflict",
      code: "revisionMismatch",
      message: "Run changed: expected revision 3, current 5",
      revision: 5,
    });
    const error = (() => {
      try {
        receiptOf("run.pause", conflict);
      } catch (e) {
        return e as HostCommandError;
      }
    })();
    expect(error).toBeInstanceOf(HostCommandError);
    expect(error).toMatchObject({ outcome: "conflict", code: "revisionMismatch", revision: 5 });
    const bad = successResponse({ requestId: "r", hostEpoch: 1, receipt: { stopping: "yes" } });
    expect(() => receiptOf("host.stop", bad)).toThrow(ProtocolRejectedError);
  });
});

describe("createHostClient()", () => {
  test("a request lost with its connection is retried with the same request id and deadline", async () => {
    const cancels: { requestId: string; notAfter?: number }[] = [];
    await serve((request, socket) => {
      if (request.operation !== "run.cancel") return answerStatus(request, socket);
      cancels.push({ requestId: request.requestId, notAfter: request.notAfter });
      if (cancels.length <= 3) {
        socket.destroy();
        return null;
      }
      return failureResponse({
        requestId: request.requestId,
        hostEpoch: FAKE_EPOCH,
        outcome: "notFound",
        code: "runNotFound",
        message: "Run not found: run-9",
      });
    });
    const client = createHostClient({ stateDir: dir, autoStart: false, retryDeadlineMs: 20_000 });
    try {
      const before = Date.now();
      const response = await client.request("run.cancel", { runId: "run-9" });
      expect(response.outcome).toBe("notFound");
      expect(cancels).toHaveLength(4);
      expect(new Set(cancels.map((c) => c.requestId)).size).toBe(1);
      expect(new Set(cancels.map((c) => c.notAfter)).size).toBe(1);
      expect(cancels[0].notAfter).toBeGreaterThanOrEqual(before + 20_000);
      await expect(client.call("run.cancel", { runId: "run-9" })).rejects.toMatchObject({
        outcome: "notFound",
      });
      expect(cancels[4].requestId).not.toBe(cancels[0].requestId);
    } finally {
      client.close();
    }
  });

  test("a host that says it is stopping is asked again until the next one answers", async () => {
    let stopping = 2;
    const seen: (number | undefined)[] = [];
    await serve((request, socket) => {
      if (request.operation !== "run.pause") return answerStatus(request, socket);
      seen.push(request.hostEpoch);
      if (stopping-- > 0) {
        return failureResponse({
          requestId: request.requestId,
          hostEpoch: FAKE_EPOCH,
          outcome: "unavailable",
          code: "hostStopping",
          message: "Host unavailable: the host is stopping; retry and a new host will start",
        });
      }
      return failureResponse({
        requestId: request.requestId,
        hostEpoch: FAKE_EPOCH,
        outcome: "notFound",
        code: "runNotFound",
        message: "Run not found: run-9",
      });
    });
    const client = createHostClient({ stateDir: dir, autoStart: false, retryDeadlineMs: 20_000 });
    try {
      expect((await client.request("run.pause", { runId: "run-9" })).outcome).toBe("notFound");
      expect(seen).toEqual([FAKE_EPOCH, FAKE_EPOCH, FAKE_EPOCH]);
      expect(client.hostEpoch).toBe(FAKE_EPOCH);
    } finally {
      client.close();
    }
  });

  test("no host past the deadline: unavailable, and a command says it may have been applied", async () => {
    const client = createHostClient({ stateDir: dir, autoStart: false, retryDeadlineMs: 300 });
    const started = Date.now();
    const error = await client.request("run.cancel", { runId: "run-9" }).catch((e) => e);
    expect(error).toBeInstanceOf(HostUnavailableError);
    expect(error.message).toMatch(/retried for 0 s; it may or may not have been applied/);
    expect(Date.now() - started).toBeLessThan(15_000);
    client.close();
  });

  test("a command that may have been applied names the command that shows what it changes", async () => {
    // `status` shows runs only: a schedule's, a controller's or a prune's change is not there.
    const client = createHostClient({ stateDir: dir, autoStart: false, retryDeadlineMs: 50 });
    try {
      const error = await client.request("schedule.add", {}).catch((e) => e);
      expect(error).toBeInstanceOf(HostUnavailableError);
      expect(error.message).toContain(
        "it may or may not have been applied: check with `pi-workflows schedule list`",
      );
    } finally {
      client.close();
    }
    const id = "run-1a2b3c4d-0000-4000-8000-000000000000";
    const cases: [HostOperation, string | undefined, string][] = [
      ["run.cancel", id, "pi-workflows status run-1a2b3c4d"],
      ["effect.resolve", id, "pi-workflows status run-1a2b3c4d"],
      ["run.start", undefined, "pi-workflows list"],
      ["run.rerun", id, "pi-workflows list"],
      ["schedule.remove", undefined, "pi-workflows schedule list"],
      ["controller.apply", undefined, "pi-workflows controller list"],
      ["controller.delete", undefined, "pi-workflows controller list"],
      ["host.prune", undefined, "pi-workflows prune --dry-run"],
    ];
    for (const [operation, runId, command] of cases) {
      expect(checkCommand(operation, runId), operation).toBe(command);
    }
  });

  test("close() is final: a request in flight stops, nothing reconnects, later ones fail", async () => {
    // The Pi extension closes its client at session_shutdown while a long poll is in flight;
    // a reconnect after that kept `pi -p` from ever exiting.
    let connects = 0;
    let held!: () => void;
    const waiting = new Promise<void>((resolve) => (held = resolve));
    const fake = await serve((request, socket) => {
      if (request.operation !== "session.wait") return answerStatus(request, socket);
      held();
      return null; // never answered: the request is in flight when the client closes
    });
    fake.server.on("connection", () => connects++);
    const client = createHostClient({ stateDir: dir, autoStart: false, retryDeadlineMs: 20_000 });
    const inFlight = client.request("session.wait", {
      payload: { sessionId: "s-1", cursor: 0, waitMs: 25_000 },
    }).catch((e) => e);
    await waiting;
    client.close();
    let bound: ReturnType<typeof setTimeout> | undefined;
    const error = await Promise.race([
      inFlight,
      new Promise((resolve) => (bound = setTimeout(() => resolve("still in flight"), 5_000))),
    ]);
    clearTimeout(bound);
    expect(error).toBeInstanceOf(HostUnavailableError);
    expect((error as Error).message).toMatch(/client was closed/);
    await expect(client.call("host.status")).rejects.toThrow(/client was closed/);
    expect(client.closed).toBe(true);
    expect(connects).toBe(1);
  });

  test("without a host and without auto-start: HostUnavailableError", async () => {
    const client = createHostClient({ stateDir: dir, autoStart: false });
    await expect(client.call("host.status")).rejects.toBeInstanceOf(HostUnavailableError);
    client.close();
  });
});
