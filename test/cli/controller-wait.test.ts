/**
 * `controller ... --wait --timeout S` that gets "ask again" (the host is stopping, or the request
 * reached a host older than one the client saw) as its wait's deadline passes ends by its timeout,
 * exit 7, as it does when no host answers at all: the client hands such an answer back once its
 * deadline has passed, and the wait counted it as the host's refusal (exit 4, or 3 for a stale
 * epoch). A socket responder (test/client/fixtures) gives the answer on cue and moves the test's
 * wall clock past the deadline as it answers (only `Date` is faked: every timer stays real); a
 * real host gives such answers only in the moments of a stop. The wait against a frozen real host
 * is in test/controllers/cli.test.ts.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { hostSocketPath } from "../../src/client/socket-path.ts";
import { failureResponse, successResponse } from "../../src/protocol/host-response.ts";
import { runCliInProcess } from "../support/cli-in-process.ts";
import {
  answerStatus,
  FAKE_EPOCH,
  type FakeHost,
  startFakeHost,
} from "../client/fixtures/fake-host-server.ts";

let dir: string | undefined;
let host: FakeHost | undefined;

afterEach(async () => {
  vi.useRealTimers();
  await host?.close();
  host = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A resource being deleted that waits for its finalizer. */
const deleting = {
  resource: {
    metadata: {
      uid: "res-1",
      controller: "sync",
      key: "r",
      resourceVersion: 2,
      generation: 1,
      deletionTimestamp: "2026-12-07T12:00:00.000Z",
      finalizers: ["sync/cleanup"],
    },
    spec: null,
    status: { observedGeneration: 1, conditions: [], controllerStatus: null },
  },
  removed: false,
};

const answers = {
  stopping: { outcome: "unavailable", code: "hostStopping", message: "the host is stopping" },
  staleEpoch: { outcome: "rejected", code: "staleEpoch", message: "it names an older epoch" },
} as const;

describe("controller delete --wait that gets 'ask again' at its deadline", () => {
  for (const kind of ["stopping", "staleEpoch"] as const) {
    it(`ends by its --timeout (exit 7) when the answer at the deadline is ${kind}`, async () => {
      dir = mkdtempSync(join(tmpdir(), "piw-cw-"));
      vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
      let polls = 0;
      host = await startFakeHost(hostSocketPath(dir), (request) => {
        if (request.operation === "controller.delete") {
          return successResponse({
            requestId: request.requestId,
            hostEpoch: FAKE_EPOCH,
            receipt: structuredClone(deleting),
          });
        }
        if (request.operation !== "controller.get") return answerStatus(request, null as never);
        polls++;
        // The answer comes as the wait's 60 s run out.
        vi.setSystemTime(Date.now() + 61_000);
        return failureResponse({
          requestId: request.requestId,
          hostEpoch: FAKE_EPOCH,
          ...answers[kind],
        });
      });
      const env = {
        ...process.env,
        PI_WORKFLOWS_STATE_DIR: dir,
        PI_CODING_AGENT_DIR: join(dir, "agent"),
      };
      const result = await runCliInProcess(
        ["controller", "delete", "sync", "r", "--wait", "--timeout", "60", "--cwd", dir],
        env,
      );
      expect(result.code, result.stdout + result.stderr).toBe(7);
      expect(result.stdout).toBe(
        "Deleting sync/r: waiting for its finalizers (sync/cleanup)\n" +
          "Not deleted within 60 s; it goes on in the host\n",
      );
      expect(result.stderr).toBe("");
      expect(polls).toBe(1);
    });
  }
});

describe("controller delete --wait with a --timeout above the client's retry window", () => {
  it("asks again while 'ask again' comes before its own deadline", async () => {
    dir = mkdtempSync(join(tmpdir(), "piw-cw-"));
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    let polls = 0;
    host = await startFakeHost(hostSocketPath(dir), (request) => {
      if (request.operation === "controller.delete") {
        return successResponse({
          requestId: request.requestId,
          hostEpoch: FAKE_EPOCH,
          receipt: structuredClone(deleting),
        });
      }
      if (request.operation !== "controller.get") return answerStatus(request, null as never);
      // Stopping for 183 s, past the client's 60 s window three times; then the resource is gone.
      if (++polls > 3) {
        return failureResponse({
          requestId: request.requestId,
          hostEpoch: FAKE_EPOCH,
          outcome: "notFound",
          code: "runNotFound",
          message: "no such resource",
        });
      }
      vi.setSystemTime(Date.now() + 61_000);
      return failureResponse({
        requestId: request.requestId,
        hostEpoch: FAKE_EPOCH,
        ...answers.stopping,
      });
    });
    const env = {
      ...process.env,
      PI_WORKFLOWS_STATE_DIR: dir,
      PI_CODING_AGENT_DIR: join(dir, "agent"),
    };
    const result = await runCliInProcess(
      ["controller", "delete", "sync", "r", "--wait", "--timeout", "600", "--cwd", dir],
      env,
    );
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toBe(
      "Deleting sync/r: waiting for its finalizers (sync/cleanup)\nDeleted sync/r\n",
    );
    expect(polls).toBe(4);
  });
});
