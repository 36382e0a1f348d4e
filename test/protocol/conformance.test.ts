/**
 * The published JSON Schemas against real frames, checked with a standard validator (ajv,
 * draft 2020-12): every socket operation and outcome of a live host, and every frame real
 * workers and resolvers exchange with real supervision (recorded by a tap on fd 3). If the
 * schemas and the wire drift apart, this fails.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOST_OPERATIONS } from "../../src/protocol/host-operations.ts";
import {
  type CliProcess,
  hostRequest,
  RawClient,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../host/helpers.ts";
import { createHarness, type Harness, isTerminal } from "../worker/harness.ts";

const here = dirname(fileURLToPath(import.meta.url));
const SCHEMA_DIR = join(here, "../../schemas");
const RECORDING_WORKER = join(here, "fixtures", "recording-worker.ts");

function loadValidator() {
  const ajv = addFormats.default(new Ajv2020.default({ strict: true, strictRequired: false }));
  for (const file of readdirSync(SCHEMA_DIR)) {
    ajv.addSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, file), "utf8")), file);
  }
  return (ref: string, value: unknown): string | null => {
    const validate = ajv.getSchema(ref);
    if (!validate) throw new Error(`No schema ${ref}`);
    return validate(value) ? null : ajv.errorsText(validate.errors);
  };
}

const check = loadValidator();

function expectValid(ref: string, value: unknown): void {
  const error = check(ref, value);
  expect(error, `${ref}: ${JSON.stringify(value).slice(0, 400)}`).toBeNull();
}

describe("socket frames of a live host", () => {
  let home: TempHome;
  let host: CliProcess;
  let client: RawClient;
  const project = () => join(home.root, "project");
  const seen: { request: Record<string, unknown>; response: any }[] = [];

  beforeAll(async () => {
    home = tempHome();
    mkdirSync(project());
    const write = (name: string, source: string) => writeFileSync(join(project(), name), source);
    write(
      "hello.workflow.ts",
      `import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "hello", startAt: "greet",
  nodes: { greet: compute({ run: () => ({ message: "hi" }) }) }, edges: [],
});`,
    );
    write(
      "gate.workflow.ts",
      `import { checkpoint, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "gate", startAt: "ask",
  nodes: { ask: checkpoint({ summary: () => "Go?" }) }, edges: [],
});`,
    );
    write(
      "step.workflow.ts",
      `import { agent, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "step", startAt: "draft",
  nodes: { draft: agent({ prompt: () => "Say hi as JSON", expectedOutput: '{"hi": true}' }) },
  edges: [],
});`,
    );
    host = await startHostProcess(home.env);
    client = await RawClient.connect(home.socketPath);
  });

  afterAll(async () => {
    client?.close();
    if (host) await stopProcess(host);
    home?.cleanup();
  });

  /** One request on the shared connection; both frames are kept for the schema checks. */
  async function ask(operation: string, fields: Record<string, unknown> = {}): Promise<any> {
    const request = hostRequest(operation, fields);
    const response = await client.request(request, 30_000);
    seen.push({ request, response });
    // The host closes a connection after a request it could not parse.
    if (response?.error?.code === "invalidRequest") {
      client.close();
      client = await RawClient.connect(home.socketPath);
    }
    return response;
  }

  async function status(runId: string): Promise<any> {
    const answer = await ask("run.status", { runId });
    if (answer.outcome !== "accepted") throw new Error(`status: ${JSON.stringify(answer)}`);
    return answer.receipt;
  }

  async function startRun(workflow: string, extra: Record<string, unknown> = {}) {
    const answer = await ask("run.start", {
      payload: { workflow, cwd: project(), input: {}, ...extra },
    });
    expect(answer.outcome).toBe("accepted");
    return answer.receipt.run.runId as string;
  }

  async function waitingAt(runId: string): Promise<any> {
    let receipt: any;
    await waitFor(
      async () => {
        receipt = await status(runId);
        return receipt.waiting !== undefined;
      },
      `run ${runId} to wait`,
      30_000,
    );
    return receipt.waiting;
  }

  it("every operation and outcome matches the published schemas", async () => {
    // run.start: accepted, the same request again (stored receipt), a new request with the same
    // idempotency key (adopted), an unknown workflow (rejected).
    const first = hostRequest("run.start", {
      idempotencyKey: "conformance-hello",
      payload: { workflow: "./hello.workflow.ts", cwd: project(), input: {} },
    });
    const started = await client.request(first, 30_000);
    seen.push({ request: first, response: started });
    expect(started.outcome).toBe("accepted");
    const helloRun = started.receipt.run.runId as string;
    seen.push({ request: first, response: await client.request(first, 30_000) });
    const adopted = await ask("run.start", {
      idempotencyKey: "conformance-hello",
      payload: { workflow: "./hello.workflow.ts", cwd: project(), input: {} },
    });
    expect(adopted.outcome).toBe("adopted");
    await ask("run.start", { payload: { workflow: "./missing.workflow.ts", cwd: project() } });

    await waitFor(async () => (await status(helloRun)).run.state === "completed", "hello", 30_000);
    await ask("run.status", {
      runId: helloRun,
      payload: { includeUpdates: true, includeNotifications: true, attemptLimit: 5 },
    });
    await ask("run.status", { runId: "no-such-run" }); // notFound
    await ask("run.list", { payload: { all: true, limit: 2 } });
    await ask("run.find", { payload: { prefix: helloRun.slice(4, 10) } });

    // A checkpoint: pause, a stale expectedRevision (conflict), resume, answer, answer again.
    const gateRun = await startRun("./gate.workflow.ts");
    const waiting = await waitingAt(gateRun);
    const paused = await ask("run.pause", { runId: gateRun });
    expect(paused.outcome).toBe("accepted");
    const stale = await ask("run.resume", { runId: gateRun, expectedRevision: 0 });
    expect(stale.outcome).toBe("conflict");
    await ask("run.resume", { runId: gateRun });
    const answerPayload = { nodeId: waiting.nodeId, attemptId: waiting.attemptId, answer: {} };
    expect((await ask("checkpoint.answer", { runId: gateRun, payload: answerPayload })).outcome)
      .toBe("accepted");
    await ask("checkpoint.answer", { runId: gateRun, payload: answerPayload }); // refused
    await ask("decision.answer", { runId: gateRun, payload: { ...answerPayload, answer: "x" } });

    // An interactive agent step, driven the way the Pi extension drives it.
    const sessionId = "conformance-session";
    const stepRun = await startRun("./step.workflow.ts", {
      executionMode: "interactive",
      originSessionId: sessionId,
    });
    let step: any = null;
    await waitFor(
      async () => {
        step = (await ask("interaction.claim", { payload: { sessionId } })).receipt.interaction;
        if (step === null) await ask("session.wait", { payload: { sessionId, waitMs: 500 } });
        return step !== null;
      },
      "the agent step",
      30_000,
    );
    const target = {
      interactionId: step.interactionId,
      sessionId,
    };
    await ask("interaction.present", {
      runId: stepRun,
      payload: { ...target, sessionEntryId: "entry-1" },
    });
    await ask("interaction.remind", { runId: stepRun, payload: { ...target, reminder: 1 } });
    const contract = { nodeId: step.contract.step, attemptId: step.contract.attempt };
    await ask("interaction.update", {
      runId: stepRun,
      idempotencyKey: "call-update",
      payload: { ...target, ...contract, update: { type: "status", data: { message: "working" } } },
    });
    await ask("interaction.submit", {
      runId: stepRun,
      idempotencyKey: "call-submit",
      payload: { ...target, ...contract, submission: { hi: true }, waitMs: 10_000 },
    });
    await waitFor(async () => (await status(stepRun)).run.state === "completed", "step", 30_000);

    // The outbox and the rest: answered with receipts or refused, each a well-formed frame.
    await ask("notification.claim", { payload: { sessionId } });
    await ask("notification.deliver", {
      payload: { notificationId: "none", sessionId, sessionEntryId: "e" },
    });
    await ask("turn.claim", { payload: { sessionId } });
    await ask("turn.resolve", {
      payload: { turnIntentId: "none", sessionId, sessionEntryId: "e" },
    });
    await ask("run.cancel", { runId: helloRun, payload: { reason: "done already" } });
    await ask("effect.resolve", {
      runId: helloRun,
      payload: { target: "no-effect", verdict: "applied" },
    });
    for (const op of HOST_OPERATIONS.filter((op) => op.startsWith("controller."))) {
      await ask(op, { payload: {} });
    }
    await ask("host.status");
    await ask("run.list", { hostEpoch: 999 }); // staleEpoch
    // A request the envelope schema refuses, answered before the connection closes.
    await ask("run.list", { payload: { limit: -1 } });
    // host.stop and a request behind it in the same write: the second is `unavailable`.
    const stop = hostRequest("host.stop");
    const late = hostRequest("run.list");
    client.write(`${JSON.stringify(stop)}\n${JSON.stringify(late)}\n`);
    seen.push({ request: stop, response: await client.next() });
    const lateAnswer = await client.next();
    if (lateAnswer !== null) seen.push({ request: late, response: lateAnswer });
    await host.exited;

    const outcomes = new Set<string>();
    const operations = new Set<string>();
    for (const { request, response } of seen) {
      operations.add(String(request.operation));
      // The schema and the host agree on which requests are malformed.
      if (response.error?.code === "invalidRequest") {
        expect(check("host-request.v1.json", request), JSON.stringify(request)).not.toBeNull();
      } else expectValid("host-request.v1.json", request);
      expectValid("host-response.v1.json", response);
      outcomes.add(response.outcome);
      if (response.outcome === "accepted" || response.outcome === "adopted") {
        expectValid(`host-response.v1.json#/$defs/${request.operation}.receipt`, response.receipt);
      }
    }
    expect([...operations].sort()).toEqual([...HOST_OPERATIONS].sort());
    expect([...outcomes].sort()).toEqual(
      expect.arrayContaining(["accepted", "adopted", "conflict", "notFound", "rejected"]),
    );
    if (lateAnswer !== null) expect(outcomes).toContain("unavailable");
  }, 120_000);
});

describe("worker channel frames under real supervision", () => {
  let h: Harness;
  let recordDir: string;

  beforeAll(async () => {
    recordDir = "";
    h = await createHarness({}, {
      workerCommand: (args) => ({
        command: process.execPath,
        args: [RECORDING_WORKER, ...args.slice(1)],
      }),
      childEnv: () => ({ PIW_RECORD_DIR: recordDir }),
    });
    recordDir = join(h.root, "frames");
    mkdirSync(recordDir);
  });

  afterAll(async () => {
    await h?.close();
  });

  it("launch envelopes, messages, replies and resolver frames match the schemas", async () => {
    const effects = join(h.root, "applies.txt");
    const path = h.writeWorkflow(
      "frames.workflow.ts",
      `import { appendFileSync } from "node:fs";
import { action, checkpoint, compute, defineWorkflow, notify, shell } from "pi-workflows";
export default defineWorkflow({
  name: "frames", startAt: "prepare",
  nodes: {
    prepare: compute({ run: () => ({ n: 1 }) }),
    say: shell({ exec: () => ({ command: "echo", args: ["hi"] }) }),
    tell: notify({ message: () => "half way" }),
    charge: action({
      effect: { type: "payment", key: () => "order-1" },
      run: ({ publishUpdate }) => {
        publishUpdate({ type: "log", key: "charge", data: { done: 1 } });
        appendFileSync(${JSON.stringify(effects)}, "x");
        return { ok: true };
      },
    }),
    gate: checkpoint({ summary: () => "Go?" }),
  },
  edges: [
    { from: "prepare", to: "say" }, { from: "say", to: "tell" },
    { from: "tell", to: "charge" }, { from: "charge", to: "gate" },
  ],
});`,
    );
    const failing = h.writeWorkflow(
      "fails.workflow.ts",
      `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "fails", startAt: "boom",
  nodes: { boom: compute({ run: () => { throw new Error("no"); } }) }, edges: [],
});`,
    );
    const parked = await h.startRun(path);
    const waiting = await h.waitForRun(parked, (run) => run.state === "waiting" || isTerminal(run));
    expect([waiting.state, waiting.error]).toEqual(["waiting", null]);
    const failed = await h.startRun(failing);
    await h.waitForRun(failed, isTerminal);
    const missing = await h.supervision.resolve({
      workflow: "./missing.workflow.ts",
      input: {},
      cwd: h.projectDir,
    });
    expect(missing.ok).toBe(false);

    const kinds = new Set<string>();
    const firsts = new Set<string>();
    let replies = 0;
    const pids = new Set(readdirSync(recordDir).map((name) => name.replace(/\.(in|out)$/, "")));
    for (const pid of pids) {
      const incoming = frames(join(recordDir, `${pid}.in`));
      const outgoing = frames(join(recordDir, `${pid}.out`));
      const first = incoming[0] as { schema: string };
      firsts.add(first.schema);
      if (first.schema === "pi-workflows.resolve-request.v1") {
        expectValid("resolve-request.v1.json", first);
        // Progress frames (the step being run), then the one answer.
        for (const frame of outgoing.slice(0, -1)) expectValid("resolve-progress.v1.json", frame);
        expectValid("resolve-result.v1.json", outgoing.at(-1));
        continue;
      }
      expectValid("worker-launch.v1.json", first);
      for (const reply of incoming.slice(1)) {
        expectValid("worker-reply.v1.json", reply);
        replies++;
      }
      for (const message of outgoing) {
        expectValid("worker-message.v1.json", message);
        kinds.add((message as { kind: string }).kind);
      }
    }
    expect([...firsts].sort()).toEqual([
      "pi-workflows.resolve-request.v1",
      "pi-workflows.worker-launch.v1",
    ]);
    expect(replies).toBeGreaterThan(10);
    expect([...kinds].sort()).toEqual(expect.arrayContaining([
      "effect.reserve",
      "effect.settle",
      "node.failed",
      "node.finished",
      "node.started",
      "node.update",
      "notification.requested",
      "run.finished",
      "run.parked",
      "worker.ready",
    ]));

    // The schemas are not vacuous: a frame that lost a field or gained one is refused.
    const message = frames(join(recordDir, `${[...pids][0]}.out`))[0] as Record<string, unknown>;
    const { messageId: _dropped, ...withoutId } = message;
    expect(check("worker-message.v1.json", withoutId)).not.toBeNull();
    expect(check("worker-message.v1.json", { ...message, kind: "node.bogus" })).not.toBeNull();
  }, 120_000);
});

/** The complete NDJSON frames of one recorded direction. */
function frames(path: string): unknown[] {
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  return text.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
}
