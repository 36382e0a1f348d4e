/**
 * An in-memory stand-in for the host and worker, driving the engine exactly as the worker
 * does: decideNext -> resolveNodeTimeout -> executeNode -> commit the attempt -> repeat. Facts
 * live in memory, time comes from a FakeClock whose advance() fires node deadlines, and agent
 * steps go to a scripted executor that submits canned outputs through the engine's `accept`.
 */
import type { JsonValue } from "../../src/protocol/canonical-json.ts";
import type { AttemptFact, RunFacts } from "../../src/protocol/run-facts.ts";
import { FakeClock } from "../../src/base/clock.ts";
import {
  type AgentStepExecutor,
  type AgentStepRequest,
  type CompiledWorkflow,
  decideNext,
  type EffectPort,
  executeNode,
  type NextStep,
  NodeFailure,
  type NodeResult,
  normalizeWorkflowInput,
  resolveNodeTimeout,
} from "../../src/workflows/index.ts";

/** A FakeClock that fires registered deadlines when advanced past them. */
export class DeadlineClock extends FakeClock {
  #watchers = new Set<{ at: number; fire: () => void }>();
  override advance(ms: number): void {
    super.advance(ms);
    for (const w of [...this.#watchers]) {
      if (this.now() >= w.at) {
        this.#watchers.delete(w);
        w.fire();
      }
    }
  }
  watch(at: number, fire: () => void): () => void {
    const w = { at, fire };
    this.#watchers.add(w);
    return () => this.#watchers.delete(w);
  }
}

export type ScriptEntry = unknown | { hang: true } | { fail: string };

/** Submits each scripted output in turn through `accept`, like a model correcting itself. */
export class ScriptedExecutor implements AgentStepExecutor {
  readonly requests: AgentStepRequest[] = [];
  readonly rejections: { nodeId: string; message: string }[] = [];
  readonly script: Record<string, ScriptEntry[]>;
  constructor(script: Record<string, ScriptEntry[]>) {
    this.script = script;
  }
  async runStep(request: AgentStepRequest): Promise<JsonValue> {
    this.requests.push(request);
    const queue = this.script[request.nodeId] ?? [];
    while (queue.length > 0) {
      const entry = queue.shift();
      if (isObj(entry) && entry.hang === true) {
        await new Promise((_, reject) =>
          request.signal.addEventListener("abort", () => reject(request.signal.reason), {
            once: true,
          })
        );
      }
      if (isObj(entry) && typeof entry.fail === "string") {
        throw new NodeFailure("agentFailed", entry.fail);
      }
      const result = await request.accept(entry);
      if (result.ok) return result.output;
      this.rejections.push({ nodeId: request.nodeId, message: result.message });
    }
    throw new NodeFailure("agentGaveUp", `No accepted output for "${request.nodeId}"`);
  }
}

function isObj(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null;
}

export interface HarnessRun {
  facts: RunFacts;
  last: NextStep;
  results: { nodeId: string; result: NodeResult }[];
  updates: { nodeId: string; type: string; key: string; data: JsonValue }[];
}

export interface HarnessOptions {
  input?: JsonValue;
  facts?: RunFacts;
  agent?: AgentStepExecutor;
  clock?: DeadlineClock;
  /** Safety bound on loop iterations of the harness itself. */
  maxIterations?: number;
  /** Managed effects port, passed to executeNode. */
  effects?: EffectPort;
  /** Simulates a worker crash: the attempt of this node at this visit stays `running`. */
  crashAt?: { nodeId: string; visit: number };
}

/** Runs until the engine says complete, fail, wait or blocked. */
export async function runWorkflow(
  wf: CompiledWorkflow,
  options: HarnessOptions = {},
): Promise<HarnessRun> {
  const clock = options.clock ?? new DeadlineClock();
  // Like run start: the input normalizer runs once, before the first attempt.
  const facts: RunFacts = options.facts ?? {
    runId: "run-1",
    workflowName: wf.name,
    input: normalizeWorkflowInput(wf, options.input).input,
    attempts: [],
  };
  const run: HarnessRun = { facts, last: decideNext(wf, facts), results: [], updates: [] };
  const agent = options.agent ?? new ScriptedExecutor({});
  for (let i = 0; i < (options.maxIterations ?? 1000); i++) {
    const step = decideNext(wf, facts);
    run.last = step;
    if (step.kind !== "startNode") return run;
    const sequence = (facts.attempts.at(-1)?.sequence ?? 0) + 1;
    const attemptId = `attempt-${sequence}`;
    const attempt: AttemptFact = {
      attemptId,
      nodeId: step.nodeId,
      sequence,
      nodeKind: step.nodeKind,
      effect: step.effect,
      state: "running",
      startedAt: clock.now(),
      deadlineAt: null,
    };
    let timeoutMs: number | null;
    try {
      timeoutMs = await resolveNodeTimeout(wf, step.nodeId, { facts, attemptId });
    } catch (error) {
      const e = error as NodeFailure;
      facts.attempts.push({
        ...attempt,
        state: "failed",
        error: { code: e.code, message: e.message },
      });
      continue;
    }
    attempt.deadlineAt = timeoutMs === null ? null : clock.now() + timeoutMs;
    facts.attempts.push(attempt);
    if (options.crashAt?.nodeId === step.nodeId && options.crashAt.visit === step.visit) {
      return run;
    }
    const controller = new AbortController();
    const unwatch = attempt.deadlineAt === null ? () => {} : clock.watch(
      attempt.deadlineAt,
      () => controller.abort(new DOMException("Node deadline reached", "TimeoutError")),
    );
    const result = await executeNode(wf, step.nodeId, {
      facts: { ...facts, attempts: facts.attempts.filter((a) => a !== attempt) },
      attemptId,
      signal: controller.signal,
      publishUpdate: (u) => run.updates.push({ nodeId: step.nodeId, ...u }),
      agent,
      clock,
      effects: options.effects,
    });
    unwatch();
    run.results.push({ nodeId: step.nodeId, result });
    attempt.finishedAt = clock.now();
    if (result.outcome === "ok") {
      attempt.state = "ok";
      attempt.output = result.output;
    } else if (result.outcome === "waiting") {
      attempt.state = "waiting";
      attempt.output = result.request;
    } else {
      attempt.state = result.outcome;
      attempt.error = result.error;
    }
  }
  throw new Error("Harness iteration bound reached");
}

/**
 * What the host does with an answer (after checking it against the node's declaration): the
 * waiting attempt becomes `ok` with the answer as its output, and the same run routes on.
 */
export function answerWaiting(facts: RunFacts, answer: JsonValue): RunFacts {
  const copy = structuredClone(facts);
  const waiting = copy.attempts.findLast((a) => a.state === "waiting");
  if (!waiting) throw new Error("No waiting attempt to answer");
  waiting.state = "ok";
  waiting.output = answer;
  return copy;
}

/** An in-memory effects table with the host's rules: one record per (type, key). */
export class MemoryEffects implements EffectPort {
  readonly records = new Map<
    string,
    {
      effectId: string;
      fingerprint: string;
      state: "reserved" | "applied" | "rejected";
      receipt?: JsonValue;
    }
  >();
  #next = 0;
  reserve(
    request: Parameters<EffectPort["reserve"]>[0],
  ): ReturnType<EffectPort["reserve"]> {
    const key = `${request.effectType}\u0000${request.idempotencyKey}`;
    const found = this.records.get(key);
    if (found && found.fingerprint !== request.requestFingerprint) {
      return Promise.resolve({
        effectId: found.effectId,
        state: "rejected",
        error: { code: "effectKeyReused", message: "Effect key reused with another request" },
      });
    }
    if (found?.state === "applied") {
      return Promise.resolve({
        effectId: found.effectId,
        state: "applied",
        receipt: found.receipt ?? null,
      });
    }
    if (found?.state === "rejected") {
      return Promise.resolve({ effectId: found.effectId, state: "rejected" });
    }
    const record = found ?? {
      effectId: `effect-${++this.#next}`,
      fingerprint: request.requestFingerprint,
      state: "reserved" as const,
    };
    this.records.set(key, record);
    return Promise.resolve({ effectId: record.effectId, state: "reserved" });
  }
  settle(request: Parameters<EffectPort["settle"]>[0]): Promise<void> {
    for (const record of this.records.values()) {
      if (record.effectId !== request.effectId) continue;
      record.state = request.outcome;
      record.receipt = request.receipt;
    }
    return Promise.resolve();
  }
}
