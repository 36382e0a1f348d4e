/**
 * The published JSON Schemas against the real fd-3 frames of every child the host spawns: run
 * workers, workflow resolvers, controller workers and controller resolvers, under real
 * supervision, recorded by a tap around the real channel (fixtures/recording-worker.ts). One
 * supervision serves both scenarios; each checks every frame recorded so far.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ControllerHarness,
  createControllerHarness,
  isSettled,
} from "../support/controllers.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import { isTerminal } from "../support/supervision.ts";
import { check, expectValid } from "./fixtures/published-schemas.ts";

const RECORDING_WORKER = join(
  dirname(fileURLToPath(import.meta.url)),
  "fixtures",
  "recording-worker.ts",
);

/** What the recorded frames of every child so far held, each frame checked by its schema. */
interface Recorded {
  /** The schema of each child's first frame (what kind of child it was). */
  firsts: Set<string>;
  /** Message kinds run workers and controller workers sent. */
  workerKinds: Set<string>;
  controllerKinds: Set<string>;
  /** Push kinds the host sent controller workers. */
  pushKinds: Set<string>;
  /** Reply outcomes the host sent, per channel. */
  workerReplies: string[];
  controllerReplies: string[];
  /** The first message a run worker and a controller worker sent (for the negative checks). */
  sampleMessage: Record<string, unknown> | null;
  sampleControllerMessage: Record<string, unknown> | null;
}

let h: ControllerHarness;
let recordDir: string;

beforeAll(async () => {
  // Known before the supervision starts: controller children get their environment then.
  recordDir = mkdtempSync(join(tmpdir(), "piw-frames-"));
  h = await createControllerHarness({}, {
    workerCommand: (args) => ({
      command: process.execPath,
      args: [RECORDING_WORKER, ...args.slice(1)],
    }),
    childEnv: () => ({ PIW_RECORD_DIR: recordDir }),
  });
}, 30_000);

afterAll(async () => {
  await h?.close();
  rmSync(recordDir, { recursive: true, force: true });
});

describe("run worker and resolver frames under real supervision", () => {
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

    const seen = checkRecorded();
    expect(seen.firsts).toEqual(
      new Set(["pi-workflows.resolve-request.v1", "pi-workflows.worker-launch.v1"]),
    );
    expect(seen.workerReplies.length).toBeGreaterThan(10);
    expect([...seen.workerKinds].sort()).toEqual(expect.arrayContaining([
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
    const { messageId: _dropped, ...withoutId } = seen.sampleMessage!;
    expect(check("worker-message.v1.json", withoutId)).not.toBeNull();
    expect(check("worker-message.v1.json", { ...seen.sampleMessage, kind: "node.bogus" }))
      .not.toBeNull();
  }, 120_000);
});

describe("controller worker and controller resolver frames under real supervision", () => {
  it("launch, pushes, messages, replies and resolver frames match the schemas", async () => {
    h.writeWorkflow(
      "copy.workflow.ts",
      `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "copy", startAt: "copy",
  nodes: { copy: compute({ run: ({ input }) => ({ copied: input.text }) }) }, edges: [],
});`,
    );
    // A reconcile that hangs past its deadline (the host pushes `reconcile.abort`, then stops
    // the worker; its short deadline is all this controller is for), and one that applies a
    // managed effect and a child run and settles once the child has ended (the default
    // deadline: a loaded machine).
    h.writeController(
      "aborts",
      `import { existsSync, writeFileSync } from "node:fs";
import { defineController } from "pi-workflows";
export default defineController({
  name: "aborts",
  timeoutMs: 300,
  initialStatus: () => ({}),
  async reconcile(ctx, resource) {
    if (!existsSync(resource.spec.marker)) {
      writeFileSync(resource.spec.marker, "");
      // Ignores its signal: the worker's own deadline cannot end it first, the host's abort does.
      await new Promise(() => {});
    }
    return ctx.settled();
  },
});`,
    );
    h.writeController(
      "frames",
      `import { defineController } from "pi-workflows";
export default defineController({
  name: "frames",
  initialStatus: () => ({ phase: "new" }),
  async reconcile(ctx, resource) {
    const { text } = resource.spec;
    const effect = await ctx.effects.ensure({
      key: "note", kind: "file.note", request: { text },
      observe: () => null, apply: () => ({ bytes: text.length }),
    });
    const child = await ctx.workflows.ensure({
      requestKey: "copy", workflow: "./copy.workflow.ts", input: { text },
    });
    return ctx.settled({ controllerStatus: { phase: child.state, bytes: effect.receipt.bytes } });
  },
});`,
    );
    await h.apply("aborts", "one", { marker: join(h.root, "aborts-marker") });
    const aborted = await waitUntil(() => checkRecorded().pushKinds.has("reconcile.abort"), 60_000);
    expect(aborted, "no reconcile.abort push was recorded").toBe(true);
    await h.apply("frames", "one", { text: "hello" });
    const done = await h.waitForResource(
      "frames",
      "one",
      (d) => isSettled(d) && (d.resource.status.controllerStatus as any).phase === "succeeded",
      60_000,
    );
    expect(done.resource.status.controllerStatus).toEqual({ phase: "succeeded", bytes: 5 });

    const seen = checkRecorded();
    expect([...seen.firsts].sort()).toEqual(expect.arrayContaining([
      "pi-workflows.controller-launch.v1",
      "pi-workflows.controller-resolve-request.v1",
    ]));
    expect([...seen.pushKinds].sort()).toEqual(["reconcile.abort", "reconcile.assign"]);
    expect([...seen.controllerKinds].sort()).toEqual(expect.arrayContaining([
      "controller.ready",
      "effect.reserve",
      "effect.settle",
      "reconcile.finished",
      "workflow.ensure",
    ]));
    expect(seen.controllerReplies).toContain("accepted");
    // A run worker's kind is not a controller message; a controller message needs its epoch.
    const sample = seen.sampleControllerMessage!;
    expect(check("controller-message.v1.json", { ...sample, kind: "node.started" })).not.toBeNull();
    const { workerEpoch: _dropped, ...withoutEpoch } = sample;
    expect(check("controller-message.v1.json", withoutEpoch)).not.toBeNull();
  }, 120_000);
});

/** Checks every frame recorded so far against the schema its channel publishes. */
function checkRecorded(): Recorded {
  const seen: Recorded = {
    firsts: new Set(),
    workerKinds: new Set(),
    controllerKinds: new Set(),
    pushKinds: new Set(),
    workerReplies: [],
    controllerReplies: [],
    sampleMessage: null,
    sampleControllerMessage: null,
  };
  const pids = new Set(readdirSync(recordDir).map((name) => name.replace(/\.(in|out)$/, "")));
  for (const pid of pids) {
    const incoming = frames(join(recordDir, `${pid}.in`)) as Record<string, any>[];
    const outgoing = frames(join(recordDir, `${pid}.out`)) as Record<string, any>[];
    const [first, ...rest] = incoming;
    // A child just spawned: the tap has created its file but not yet written its first frame
    // whole (appendFileSync opens, then writes; a loaded machine runs this check between).
    if (first === undefined) continue;
    seen.firsts.add(first.schema);
    switch (first.schema) {
      case "pi-workflows.resolve-request.v1":
        expectValid("resolve-request.v1.json", first);
        // Progress frames (the step being run), then the one answer.
        for (const frame of outgoing.slice(0, -1)) expectValid("resolve-progress.v1.json", frame);
        expectValid("resolve-result.v1.json", outgoing.at(-1));
        break;
      case "pi-workflows.controller-resolve-request.v1":
        // One child serves several applies (it idles between them): a result per request.
        for (const request of incoming) expectValid("controller-resolve-request.v1.json", request);
        expect(outgoing.length).toBeLessThanOrEqual(incoming.length);
        for (const result of outgoing) expectValid("controller-resolve-result.v1.json", result);
        break;
      case "pi-workflows.controller-launch.v1":
        expectValid("controller-launch.v1.json", first);
        // After the launch, the host writes pushes of its own and replies to messages.
        for (const frame of rest) {
          if (frame.schema === "pi-workflows.controller-push.v1") {
            expectValid("controller-push.v1.json", frame);
            seen.pushKinds.add(frame.kind);
          } else {
            expectValid("worker-reply.v1.json", frame);
            seen.controllerReplies.push(frame.outcome);
          }
        }
        for (const message of outgoing) {
          expectValid("controller-message.v1.json", message);
          seen.controllerKinds.add(message.kind);
        }
        seen.sampleControllerMessage ??= outgoing[0] ?? null;
        break;
      default:
        expectValid("worker-launch.v1.json", first);
        for (const reply of rest) {
          expectValid("worker-reply.v1.json", reply);
          seen.workerReplies.push(reply.outcome);
        }
        for (const message of outgoing) {
          expectValid("worker-message.v1.json", message);
          seen.workerKinds.add(message.kind);
        }
        seen.sampleMessage ??= outgoing[0] ?? null;
    }
  }
  return seen;
}

/** The complete NDJSON frames of one recorded direction (so far). */
function frames(path: string): unknown[] {
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  // A frame still being written (no newline yet) is not complete.
  return text.split("\n").slice(0, -1).filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line));
}
