/**
 * What a caller of the host gets: `receiptOf` (a typed receipt, or one error with the outcome) and
 * `createHostClient` (retries with the same request id and deadline while no host answers, a
 * stopping host asked again, the deadline's last word, close() for good), against the socket
 * responder in fixtures/. The socket and one connection are host-connection.test.ts's.
 */
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HostCommandError, receiptOf } from "../../src/client/command-receipt.ts";
import { createHostClient } from "../../src/client/host-client.ts";
import { checkCommand } from "../../src/client/check-command.ts";
import type { HostOperation } from "../../src/protocol/host-operations.ts";
import { hostSocketPath } from "../../src/client/socket-path.ts";
import { HostUnavailableError, ProtocolRejectedError } from "../../src/protocol/failures.ts";
import { failureResponse, successResponse } from "../../src/protocol/host-response.ts";
import {
  answerStatus,
  FAKE_EPOCH,
  type FakeHost,
  type Handler,
  startFakeHost,
} from "./fixtures/fake-host-server.ts";

let dir: string;
let socketPath: string;
let host: FakeHost | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "piw-client-"));
  socketPath = hostSocketPath(dir);
});

afterEach(async () => {
  await host?.close();
  host = undefined;
  rmSync(dir, { recursive: true, force: true });
});

async function serve(handler: Handler = answerStatus) {
  host = await startFakeHost(socketPath, handler);
  return host;
}

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
    // One try (no deadline, so no last try after it: the case above waits that out).
    const client = createHostClient({ stateDir: dir, autoStart: false, retryDeadlineMs: 0 });
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
