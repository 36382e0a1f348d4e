import { describe, expect, test } from "vitest";
import {
  HOST_REQUEST_SCHEMA,
  parseHostRequest,
  readRequestId,
  requestFingerprint,
} from "../../src/protocol/host-request.ts";
import {
  HOST_OPERATIONS,
  type HostOperation,
  OPERATION_SPECS,
  SERVED_OPERATIONS,
} from "../../src/protocol/host-operations.ts";
import { MAX_JSON_DEPTH } from "../../src/protocol/canonical-json.ts";
import { ClientJsonValueSchema, JSON_TOO_DEEP } from "../../src/protocol/json-depth.ts";
import { JsonValueSchema } from "../../src/protocol/run-facts.ts";

/** One valid payload per operation, and one payload each operation must refuse. */
const CASES: Record<HostOperation, { good: unknown; bad: unknown; badPath: string }> = {
  "run.start": {
    good: { workflow: "hello", input: { topic: "x" }, cwd: "/tmp/project" },
    bad: { workflow: "hello", cwd: "relative/dir" },
    badPath: "payload.cwd",
  },
  "run.pause": { good: {}, bad: { force: true }, badPath: "payload.force" },
  "run.resume": { good: {}, bad: { from: 1 }, badPath: "payload.from" },
  "run.cancel": { good: { reason: "not needed" }, bad: { reason: "" }, badPath: "payload.reason" },
  "run.rerun": {
    good: { from: "review", visit: 2, source: "current", input: { task: "x" } },
    bad: { from: "review", visit: 0 },
    badPath: "payload.visit",
  },
  "run.budget": {
    good: { raiseCostUsd: 2.5 },
    bad: { raiseCostUsd: -1 },
    badPath: "payload.raiseCostUsd",
  },
  "run.status": {
    good: { eventsAfter: 3 },
    bad: { eventsAfter: -1 },
    badPath: "payload.eventsAfter",
  },
  "run.list": { good: { all: true, limit: 10 }, bad: { limit: 5000 }, badPath: "payload.limit" },
  "run.find": {
    good: { prefix: "run-1a", limit: 5 },
    bad: { prefix: "a b" },
    badPath: "payload.prefix",
  },
  "run.logs": {
    good: { nodeId: "build", after: { "attempt-1/stdout": "0:120" }, maxBytes: 4096 },
    bad: { after: { "attempt-1/stdout": "../etc" } },
    badPath: "payload.after.attempt-1/stdout",
  },
  "checkpoint.answer": {
    good: { nodeId: "review", attemptId: "attempt-1", answer: "yes" },
    bad: { answer: "yes" },
    badPath: "payload.nodeId",
  },
  "decision.answer": {
    good: { nodeId: "approve", attemptId: "attempt-1", answer: { choice: "ship" } },
    bad: { nodeId: "", attemptId: "attempt-1", answer: 1 },
    badPath: "payload.nodeId",
  },
  "interaction.submit": {
    good: {
      interactionId: "ir-1",
      nodeId: "draft",
      attemptId: "att-1",
      sessionId: "s-1",
      submission: { text: "done" },
    },
    bad: { interactionId: "ir-1", nodeId: "draft", attemptId: "att-1", submission: {} },
    badPath: "payload.sessionId",
  },
  "interaction.update": {
    good: {
      interactionId: "ir-1",
      nodeId: "draft",
      attemptId: "att-1",
      sessionId: "s",
      update: { type: "status", data: 1 },
    },
    bad: { interactionId: "has space", nodeId: "d", attemptId: "a", sessionId: "s", update: 1 },
    badPath: "payload.interactionId",
  },
  "interaction.claim": { good: { sessionId: "s-1" }, bad: {}, badPath: "payload.sessionId" },
  "interaction.present": {
    good: { interactionId: "ir-1", sessionId: "s-1", sessionEntryId: "e-1", replaces: null },
    bad: { interactionId: "ir-1", sessionId: "s-1" },
    badPath: "payload.sessionEntryId",
  },
  "interaction.remind": {
    good: { interactionId: "ir-1", sessionId: "s-1", reminder: 1 },
    bad: { interactionId: "ir-1", sessionId: "s-1", reminder: 4 },
    badPath: "payload.reminder",
  },
  "session.wait": {
    good: { sessionId: "s-1", cursor: 4, waitMs: 100 },
    bad: { sessionId: "s-1", waitMs: 60_000 },
    badPath: "payload.waitMs",
  },
  "notification.claim": {
    good: { sessionId: "s-1" },
    bad: { sessionId: 7 },
    badPath: "payload.sessionId",
  },
  "notification.deliver": {
    good: { notificationId: "n-1", sessionId: "s-1", sessionEntryId: "e-1" },
    bad: { notificationId: "n-1", sessionId: "s-1" },
    badPath: "payload.sessionEntryId",
  },
  "turn.claim": {
    good: { sessionId: "s-1", userTurnAt: 1_700_000_000_000 },
    bad: { sessionId: "s-1", userTurnAt: -1 },
    badPath: "payload.userTurnAt",
  },
  "turn.resolve": {
    good: { turnIntentId: "t-1", sessionId: "s-1", sessionEntryId: "e-9" },
    bad: { turnIntentId: "t-1" },
    badPath: "payload.sessionId",
  },
  "controller.list": {
    good: { cwd: "/srv/p" },
    bad: { cwd: "/srv/p", name: "x" },
    badPath: "payload.name",
  },
  "controller.get": {
    good: { cwd: "/srv/p", controller: "nightly", key: "a" },
    bad: { cwd: "/srv/p", controller: "Bad Name", key: "a" },
    badPath: "payload.controller",
  },
  "controller.apply": {
    good: { cwd: "/srv/p", controller: "nightly", key: "a", spec: { n: 1 } },
    bad: { cwd: "/srv/p", controller: "nightly", key: "a", sourceDigest: "md5:1" },
    badPath: "payload.sourceDigest",
  },
  "controller.reconcile": {
    good: { cwd: "/srv/p", controller: "nightly", key: "a" },
    bad: { cwd: "/srv/p", controller: "nightly", key: "" },
    badPath: "payload.key",
  },
  "controller.delete": {
    good: { cwd: "/srv/p", controller: "nightly", key: "a" },
    bad: { cwd: "relative", controller: "nightly", key: "a" },
    badPath: "payload.cwd",
  },
  "controller.bind": {
    good: { cwd: "/srv/p", controller: "nightly", sessionId: "sess-1" },
    bad: { cwd: "/srv/p", controller: "nightly", sessionId: "" },
    badPath: "payload.sessionId",
  },
  "controller.unbind": {
    good: { cwd: "/srv/p", controller: "nightly" },
    bad: { cwd: "/srv/p", controller: "Nightly!" },
    badPath: "payload.controller",
  },
  "schedule.add": {
    good: { name: "nightly", workflow: "audit", cwd: "/srv/p", cron: "0 9 * * 1-5" },
    bad: { name: "nightly", workflow: "audit", cwd: "/srv/p", cron: "0 25 * * *" },
    badPath: "payload",
  },
  "schedule.apply": {
    good: { workflow: "./audit.workflow.ts", cwd: "/srv/p" },
    bad: { workflow: "./audit.workflow.ts", cwd: "/srv/p", defaultTimeZone: "Mars/Base" },
    badPath: "payload.defaultTimeZone",
  },
  "schedule.list": { good: {}, bad: { all: true }, badPath: "payload.all" },
  "schedule.show": {
    good: { name: "nightly", firings: 5 },
    bad: { name: "nightly", firings: 500 },
    badPath: "payload.firings",
  },
  "schedule.pause": { good: { name: "nightly" }, bad: { name: "" }, badPath: "payload.name" },
  "schedule.resume": { good: { name: "nightly" }, bad: { name: "a b" }, badPath: "payload.name" },
  "schedule.remove": { good: { name: "nightly" }, bad: {}, badPath: "payload.name" },
  "host.status": { good: {}, bad: { verbose: true }, badPath: "payload.verbose" },
  "host.stop": { good: {}, bad: [], badPath: "payload" },
  "host.prune": {
    good: { keepDays: 7, dryRun: true },
    bad: { keepDays: -1 },
    badPath: "payload.keepDays",
  },
  "effect.resolve": {
    good: { target: "att-1", verdict: "applied", output: { id: 7 }, operator: "ops" },
    bad: { target: "att-1", verdict: "maybe" },
    badPath: "payload.verdict",
  },
};

/** The spec's first command set. */
const SPEC_OPERATIONS = [
  "run.start",
  "run.pause",
  "run.resume",
  "run.cancel",
  "run.status",
  "run.list",
  "checkpoint.answer",
  "decision.answer",
  "interaction.submit",
  "interaction.update",
  "notification.claim",
  "notification.deliver",
  "turn.claim",
  "turn.resolve",
  "controller.list",
  "controller.get",
  "controller.apply",
  "controller.reconcile",
  "controller.delete",
  "host.status",
  "host.stop",
];

function envelope(operation: string, payload: unknown, extra: Record<string, unknown> = {}) {
  const runId = (OPERATION_SPECS as Record<string, { runId: string }>)[operation]?.runId ===
      "required"
    ? { runId: "run-1" }
    : {};
  return {
    schema: HOST_REQUEST_SCHEMA,
    requestId: "req-1",
    clientId: "cli-1",
    operation,
    ...runId,
    payload,
    ...extra,
  };
}

describe("parseHostRequest()", () => {
  test("the operation list holds the spec's 21 (and the session reads), served ones among them", () => {
    expect(new Set(HOST_OPERATIONS).size).toBe(HOST_OPERATIONS.length);
    for (const op of SPEC_OPERATIONS) expect(HOST_OPERATIONS).toContain(op);
    for (const op of SERVED_OPERATIONS) expect(HOST_OPERATIONS).toContain(op);
    for (
      const op of [
        "run.start",
        "run.status",
        "run.find",
        "interaction.submit",
        "session.wait",
        "controller.apply",
      ] as const
    ) {
      expect(SERVED_OPERATIONS.has(op)).toBe(true);
    }
  });

  for (const operation of HOST_OPERATIONS) {
    test(`${operation}: accepts a valid payload`, () => {
      const parsed = parseHostRequest(envelope(operation, CASES[operation].good));
      if (!parsed.ok) throw new Error(parsed.error);
      expect(parsed.request.operation).toBe(operation);
    });

    test(`${operation}: refuses a bad payload with its field path`, () => {
      const parsed = parseHostRequest(envelope(operation, CASES[operation].bad));
      expect(parsed.ok).toBe(false);
      if (parsed.ok) return;
      expect(parsed.code).toBe("invalidRequest");
      expect(parsed.error.startsWith(`${CASES[operation].badPath}:`)).toBe(true);
      expect(parsed.error).not.toContain("\n");
      expect(parsed.requestId).toBe("req-1");
    });

    test(`${operation}: enforces its run id rule`, () => {
      const spec = OPERATION_SPECS[operation];
      const request = envelope(operation, CASES[operation].good) as Record<string, unknown>;
      if (spec.runId === "required") delete request.runId;
      else request.runId = "run-1";
      const parsed = parseHostRequest(request);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toMatch(/^runId: /);
    });
  }

  test("effect.resolve: output goes with the applied verdict, and only with it", () => {
    for (
      const payload of [{ target: "a", verdict: "applied" }, {
        target: "a",
        verdict: "retry",
        output: 1,
      }]
    ) {
      const parsed = parseHostRequest(envelope("effect.resolve", payload));
      expect(parsed).toMatchObject({
        ok: false,
        error: expect.stringContaining("applied verdict"),
      });
    }
    expect(parseHostRequest(envelope("effect.resolve", { target: "a", verdict: "notApplied" })).ok)
      .toBe(true);
  });

  test("run.start applies defaults: headless, null input", () => {
    const parsed = parseHostRequest(envelope("run.start", { workflow: "w", cwd: "/p" }));
    if (!parsed.ok) throw new Error(parsed.error);
    expect(parsed.request.payload).toEqual({ workflow: "w", cwd: "/p", executionMode: "headless" });
  });

  test("run.start: an interactive run needs its origin session", () => {
    const bad = parseHostRequest(
      envelope("run.start", { workflow: "w", cwd: "/p", executionMode: "interactive" }),
    );
    expect(bad).toMatchObject({ ok: false, error: expect.stringContaining("originSessionId") });
    const good = parseHostRequest(
      envelope("run.start", {
        workflow: "w",
        cwd: "/p",
        executionMode: "interactive",
        originSessionId: "sess-1",
      }),
    );
    expect(good.ok).toBe(true);
  });

  test("run.start refuses input that is not JSON-shaped", () => {
    const parsed = parseHostRequest(
      envelope("run.start", { workflow: "w", cwd: "/p", input: { n: Number.NaN } }),
    );
    expect(parsed).toMatchObject({ ok: false });
  });

  test("payload-free operations accept a missing payload", () => {
    const request = envelope("host.status", undefined) as Record<string, unknown>;
    delete request.payload;
    expect(parseHostRequest(request).ok).toBe(true);
  });

  test("envelope problems name the field", () => {
    const cases: [unknown, string][] = [
      [null, "value:"],
      ["text", "value:"],
      [{ ...envelope("host.status", {}), schema: "pi-workflows.host-request.v2" }, "schema:"],
      [{ ...envelope("host.status", {}), requestId: "" }, "requestId:"],
      [{ ...envelope("host.status", {}), requestId: "a b" }, "requestId:"],
      [{ ...envelope("host.status", {}), clientId: 5 }, "clientId:"],
      [{ ...envelope("run.cancel", {}), expectedRevision: -1 }, "expectedRevision:"],
      [{ ...envelope("run.cancel", {}), expectedRevision: 1.5 }, "expectedRevision:"],
      [{ ...envelope("run.cancel", {}), hostEpoch: 0 }, "hostEpoch:"],
      [{ ...envelope("run.cancel", {}), idempotencyKey: "" }, "idempotencyKey:"],
      [{ ...envelope("run.cancel", {}), extra: 1 }, "extra: unknown field"],
    ];
    for (const [value, prefix] of cases) {
      const parsed = parseHostRequest(value);
      expect(parsed.ok, JSON.stringify(value)).toBe(false);
      if (!parsed.ok) expect(parsed.error.startsWith(prefix), parsed.error).toBe(true);
    }
  });

  test("an unknown operation is reported as such", () => {
    const parsed = parseHostRequest(envelope("run.explode", {}));
    expect(parsed).toMatchObject({ ok: false, code: "unknownOperation", requestId: "req-1" });
  });

  test("readRequestId() keeps only well-formed ids", () => {
    expect(readRequestId({ requestId: "r-1" })).toBe("r-1");
    expect(readRequestId({ requestId: "" })).toBeUndefined();
    expect(readRequestId({ requestId: 3 })).toBeUndefined();
    expect(readRequestId([])).toBeUndefined();
  });
});

/** `levels` arrays nested in each other, the innermost holding 0. */
function nest(levels: number): unknown {
  let value: unknown = 0;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

/** Every field of a request payload that carries a client's JSON value, with its good payload. */
const CLIENT_JSON_FIELDS: [HostOperation, string, (value: unknown) => unknown][] = [
  ["run.start", "input", (input) => ({ ...(CASES["run.start"].good as object), input })],
  ["run.rerun", "input", (input) => ({ input })],
  ["checkpoint.answer", "answer", (answer) => ({ nodeId: "n", attemptId: "a-1", answer })],
  ["decision.answer", "answer", (answer) => ({ nodeId: "n", attemptId: "a-1", answer })],
  [
    "interaction.submit",
    "submission",
    (submission) => ({ ...(CASES["interaction.submit"].good as object), submission }),
  ],
  [
    "interaction.update",
    "update.data",
    (data) => ({ ...(CASES["interaction.update"].good as object), update: { type: "s", data } }),
  ],
  [
    "effect.resolve",
    "output",
    (output) => ({ target: "att-1", verdict: "applied", output }),
  ],
  [
    "controller.apply",
    "spec",
    (spec) => ({ cwd: "/srv/p", controller: "nightly", key: "a", spec }),
  ],
  [
    "controller.reconcile",
    "resolveEffect.receipt",
    (receipt) => ({
      cwd: "/srv/p",
      controller: "nightly",
      key: "a",
      resolveEffect: { effectId: "e-1", verdict: "applied", receipt },
    }),
  ],
  [
    "schedule.add",
    "input",
    (input) => ({ ...(CASES["schedule.add"].good as object), input }),
  ],
];

describe("a client's JSON values", () => {
  for (const [operation, field, payload] of CLIENT_JSON_FIELDS) {
    test(`${operation}: payload.${field} nests at most ${MAX_JSON_DEPTH} levels`, () => {
      const atLimit = parseHostRequest(envelope(operation, payload(nest(MAX_JSON_DEPTH))));
      if (!atLimit.ok) throw new Error(atLimit.error);
      // Just past the bound, and deep enough to overflow a recursive walk: the same answer.
      for (const levels of [MAX_JSON_DEPTH + 1, 20_000]) {
        const parsed = parseHostRequest(envelope(operation, payload(nest(levels))));
        expect(parsed).toEqual({
          ok: false,
          code: "invalidRequest",
          error: `payload.${field}: ${JSON_TOO_DEEP}`,
          requestId: "req-1",
        });
      }
      // Objects count like arrays.
      const deepObject = JSON.parse(
        `${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}0${"}".repeat(MAX_JSON_DEPTH + 1)}`,
      );
      expect(parseHostRequest(envelope(operation, payload(deepObject))).ok).toBe(false);
    });
  }

  test("every JSON value in a request payload is a bounded one", () => {
    // A new payload field typed JsonValueSchema would let a deeper value in: walk each
    // operation's payload schema and name any JSON value not behind the bound.
    const unbounded: string[] = [];
    const bounded = new Set<string>();
    const seen = new Set<unknown>();
    const visit = (schema: unknown, path: string) => {
      if (schema === ClientJsonValueSchema) {
        bounded.add(path);
        return;
      }
      if (schema === JsonValueSchema) {
        unbounded.push(path);
        return;
      }
      if (typeof schema !== "object" || schema === null || seen.has(schema)) return;
      seen.add(schema);
      const s = schema as Record<string, unknown>;
      if (s.entries) {
        for (const [key, entry] of Object.entries(s.entries as object)) {
          visit(entry, `${path}.${key}`);
        }
      }
      for (const key of ["wrapped", "item", "value", "rest"]) visit(s[key], path);
      for (const key of ["pipe", "options"]) {
        if (Array.isArray(s[key])) { for (const item of s[key] as unknown[]) visit(item, path); }
      }
    };
    for (const operation of HOST_OPERATIONS) {
      seen.clear();
      visit(OPERATION_SPECS[operation].payload, `${operation} payload`);
    }
    expect(unbounded).toEqual([]);
    // The table above, whose cases refuse too deep a value, names every bounded field there is.
    expect([...bounded].sort()).toEqual(
      CLIENT_JSON_FIELDS.map(([op, field]) => `${op} payload.${field}`).sort(),
    );
  });
});

describe("requestFingerprint()", () => {
  const base = { operation: "run.cancel" as const, runId: "run-1", payload: { reason: "x" } };

  test("ignores request id, client id and key order", () => {
    const a = parseHostRequest(envelope("run.cancel", { reason: "x" }));
    const b = parseHostRequest({
      ...envelope("run.cancel", { reason: "x" }),
      requestId: "req-2",
      clientId: "other",
    });
    if (!a.ok || !b.ok) throw new Error("parse failed");
    expect(requestFingerprint(a.request)).toBe(requestFingerprint(b.request));
    expect(requestFingerprint(a.request)).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  test("changes with every field it covers", () => {
    const reference = requestFingerprint(base);
    const variants = [
      { ...base, operation: "run.pause" as const },
      { ...base, runId: "run-2" },
      { ...base, expectedRevision: 4 },
      { ...base, idempotencyKey: "k" },
      { ...base, payload: { reason: "y" } },
    ];
    for (const variant of variants) expect(requestFingerprint(variant)).not.toBe(reference);
  });

  test("leaves provider credentials out, also credential-looking env variables", () => {
    const start = (payload: Record<string, unknown>) =>
      requestFingerprint({ operation: "run.start", payload });
    const plain = { workflow: "w", cwd: "/p", env: { PATH: "/bin" } };
    const reference = start(plain);
    expect(start({ ...plain, credentials: { OPENAI_API_KEY: "sk-1" } })).toBe(reference);
    expect(start({ ...plain, credentials: { OPENAI_API_KEY: "sk-2" } })).toBe(reference);
    expect(start({ ...plain, env: { PATH: "/bin", GITHUB_TOKEN: "ghp-1" } })).toBe(reference);
    expect(start({ ...plain, env: { PATH: "/bin", DEPLOY_PASSWORD: "pw" } })).toBe(reference);
    expect(start({ ...plain, env: { PATH: "/usr/bin" } })).not.toBe(reference);
    const resume = (payload: Record<string, unknown>) =>
      requestFingerprint({ operation: "run.resume", runId: "run-1", payload });
    expect(resume({ credentials: { ANTHROPIC_API_KEY: "k" } })).toBe(resume({}));
  });
});
