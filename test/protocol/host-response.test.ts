import { describe, expect, test } from "vitest";
import {
  failureResponse,
  HOST_OUTCOMES,
  HOST_RESPONSE_SCHEMA,
  HostResponseSchema,
  parseHostResponse,
  parseReceipt,
  successResponse,
} from "../../src/protocol/host-response.ts";
import { HOST_OPERATIONS } from "../../src/protocol/host-operations.ts";
import { parseWith } from "../../src/protocol/schema-issues.ts";

const runSummary = {
  runId: "run-1",
  workflowName: "hello",
  state: "queued",
  queueState: "queued",
  paused: false,
  revision: 1,
  executionMode: "headless",
  createdAt: 1,
  updatedAt: 2,
};

describe("parseHostResponse()", () => {
  test("the seven outcomes of the spec", () => {
    expect([...HOST_OUTCOMES]).toEqual([
      "accepted",
      "adopted",
      "rejected",
      "conflict",
      "notFound",
      "claimLost",
      "unavailable",
    ]);
  });

  for (const outcome of HOST_OUTCOMES) {
    const success = outcome === "accepted" || outcome === "adopted";
    test(`${outcome}: a well-formed response parses`, () => {
      const response = success
        ? successResponse({
          requestId: "r-1",
          hostEpoch: 3,
          receipt: { run: runSummary },
          revision: 2,
          adopted: outcome === "adopted",
        })
        : failureResponse({
          requestId: "r-1",
          hostEpoch: 3,
          outcome,
          code: "someCode",
          message: "Something failed: detail",
          revision: outcome === "conflict" ? 7 : undefined,
        });
      expect(response.outcome).toBe(outcome);
      const decoded = JSON.parse(JSON.stringify(response));
      const parsed = parseHostResponse(decoded);
      if (!parsed.ok) throw new Error(parsed.error);
      expect(parsed.value).toEqual(decoded);
      // A client's check of a decoded frame agrees with the full schema (which walks every value).
      expect(parseWith(HostResponseSchema, decoded)).toEqual(parsed);
    });

    test(`${outcome}: the wrong body is refused`, () => {
      const wrong = success
        ? { error: { code: "x", message: "y" } }
        : { receipt: { run: runSummary } };
      const parsed = parseHostResponse({
        schema: HOST_RESPONSE_SCHEMA,
        requestId: "r-1",
        outcome,
        hostEpoch: 1,
        ...wrong,
      });
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toMatch(/^value: Invalid response/);
    });
  }

  test("field problems name the field", () => {
    const good = successResponse({ requestId: "r", hostEpoch: 1, receipt: {} });
    const cases: [unknown, string][] = [
      [{ ...good, outcome: "maybe" }, "outcome:"],
      [{ ...good, hostEpoch: 0 }, "hostEpoch:"],
      [{ ...good, schema: "other" }, "schema:"],
      [{ ...good, receipt: [] }, "receipt:"],
      [{ ...good, revision: -2 }, "revision:"],
      [{ ...good, surprise: true }, "surprise: unknown field"],
    ];
    for (const [value, prefix] of cases) {
      const parsed = parseHostResponse(value);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error.startsWith(prefix), parsed.error).toBe(true);
    }
  });

  test("a null request id is allowed for an unattributable rejection", () => {
    const response = failureResponse({
      requestId: null,
      hostEpoch: 1,
      outcome: "rejected",
      code: "invalidJson",
      message: "Frame invalid: the line is not JSON",
    });
    expect(parseHostResponse(response).ok).toBe(true);
  });
});

describe("parseReceipt()", () => {
  test("every operation has a receipt schema that refuses a non-object", () => {
    for (const operation of HOST_OPERATIONS) {
      const parsed = parseReceipt(operation, "nope");
      expect(parsed.ok, operation).toBe(false);
    }
  });

  test("run receipts and the host status receipt", () => {
    expect(parseReceipt("run.start", { run: runSummary }).ok).toBe(true);
    expect(parseReceipt("run.list", { runs: [runSummary, runSummary] }).ok).toBe(true);
    expect(parseReceipt("run.find", { runs: [runSummary], more: false }).ok).toBe(true);
    expect(parseReceipt("run.find", { runs: [runSummary] }).ok).toBe(false);
    expect(
      parseReceipt("run.status", {
        run: runSummary,
        events: [{ seq: 1, type: "node.started", at: 5, nodeId: "a" }],
        lastEventSeq: 1,
      }).ok,
    ).toBe(true);
    const status = {
      state: "running",
      epoch: 2,
      socket: "available",
      activeWorkers: 0,
      runs: { queued: 1, running: 0, parked: 0, waiting: 0 },
      expiredClaims: 0,
      pendingInteractions: 0,
      ambiguousEffects: 0,
    };
    expect(parseReceipt("host.status", status).ok).toBe(true);
    const bad = parseReceipt("host.status", { ...status, runs: { queued: -1 } });
    expect(bad).toMatchObject({ ok: false, error: expect.stringMatching(/^receipt\.runs\./) });
    const badRun = parseReceipt("run.status", { run: { ...runSummary, state: "exploded" } });
    expect(badRun).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^receipt\.run\.state:/),
    });
  });
});
