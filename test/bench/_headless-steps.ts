/**
 * The consecutive-steps half of `npm run bench -- headless`: a run of ten agent steps in a row
 * (one Pi conversation, one Pi kept by the worker generation) against the fake model answering
 * at once, beside a bare Pi started with the same arguments and driven directly:
 *
 *   step_ms        node.finished(k-1) committed -> node.finished(k) committed, steps 2-10: all a
 *                  step costs in the run (boundary commits, prompt, model, tool call through the
 *                  bridge, validation)
 *   bare_warm_ms   on an already running bare Pi: prompt sent -> the tool call at the bridge,
 *                  answered at once -> Pi's `agent_settled` (prompts 2-10)
 *   first_step_ms  node.started(1) committed -> node.finished(1) committed (spawns the Pi)
 *   bare_start_ms  spawn of the bare Pi -> its first prompt's `agent_settled`
 *
 * Target: median step_ms / median bare_warm_ms <= 1.5. A helper, not a benchmark (main.ts skips
 * files starting with `_`).
 */
import { join } from "node:path";
import { readFrames, writeFrame } from "../../src/protocol/framing.ts";
import {
  bridgeHello,
  bridgeResult,
  parseBridgeCall,
} from "../../src/protocol/pi-bridge-messages.ts";
import type { StateStore } from "../../src/state/store.ts";
import { queryAll } from "../../src/state/statements.ts";
import { BRIDGE_TOOL } from "../../src/worker/pi-bridge-tool.ts";
import { type PiChild, spawnPiChild } from "../../src/worker/pi-child.ts";
import { bySize } from "./_figures.ts";

/** Ten; three under `--smoke` (a first step and two later ones still give every figure). */
export const STEPS = bySize(10, 3);

/** A workflow of `STEPS` agent steps in a row. */
export function stepsWorkflow(): string {
  const ids = Array.from({ length: STEPS }, (_, i) => `s${i + 1}`);
  const nodes = ids.map((id) =>
    `    ${id}: agent({ prompt: "Step ${id}: submit {\\"done\\": true}.", expectedOutput: '{"done": true}' }),`
  ).join("\n");
  const edges = ids.slice(1).map((id, i) => `    { from: "${ids[i]}", to: "${id}" },`).join("\n");
  return `import { agent, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "ten-agents",
  startAt: "s1",
  maxSteps: ${STEPS + 5},
  nodes: {
${nodes}
  },
  edges: [
${edges}
  ],
});
`;
}

/** First step and steps 2-10 of one finished run, from its committed events. */
export function stepTimes(store: StateStore, runId: string): { first: number; later: number[] } {
  const rows = queryAll<{ type: string; at: number }>(
    store,
    "SELECT type, at FROM events WHERE run_id = :runId AND type IN ('node.started', " +
      "'node.finished') ORDER BY seq",
    { runId },
  );
  const finished = rows.filter((r) => r.type === "node.finished").map((r) => r.at);
  const firstStarted = rows.find((r) => r.type === "node.started")!.at;
  if (finished.length !== STEPS) throw new Error(`Expected ${STEPS} steps, saw ${finished.length}`);
  return {
    first: finished[0] - firstStarted,
    later: finished.slice(1).map((at, i) => at - finished[i]),
  };
}

export interface BarePi {
  /** Spawn -> the first prompt settled. */
  startMs: number;
  /** Each later prompt: sent -> settled. */
  warmMs: number[];
}

/** A bare Pi with `args` (the headless child's, its own session file): `prompts` prompts. */
export async function barePi(
  command: string,
  args: readonly string[],
  where: { cwd: string; env: NodeJS.ProcessEnv; tailDir: string },
  prompts: number,
): Promise<BarePi> {
  const spawnedAt = performance.now();
  const pi = spawnPiChild({
    command,
    args,
    cwd: where.cwd,
    env: where.env,
    tail: { dir: where.tailDir, stem: "bare-steps", maxBytes: 256 * 1024 },
  });
  try {
    void writeFrame(pi.bridge, bridgeHello(BRIDGE_TOOL));
    answerToolCalls(pi);
    const times: number[] = [];
    for (let i = 0; i < prompts; i++) {
      const sentAt = i === 0 ? spawnedAt : performance.now();
      await promptAndSettle(pi, i);
      times.push(performance.now() - sentAt);
    }
    return { startMs: times[0], warmMs: times.slice(1) };
  } finally {
    await pi.stop(1_000);
  }
}

/** Every tool call on the bridge is accepted at once (ending the turn). */
function answerToolCalls(pi: PiChild): void {
  void (async () => {
    for await (const frame of readFrames(pi.bridge)) {
      const call = frame.ok ? parseBridgeCall(frame.value) : null;
      if (!call?.ok) continue;
      await writeFrame(
        pi.bridge,
        bridgeResult(call.value.callId, { ok: true, text: "Accepted.", terminate: true }),
      );
    }
  })().catch(() => {});
}

function promptAndSettle(pi: PiChild, n: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("The bare Pi did not settle")), 60_000);
    const stop = pi.onRecord((record) => {
      if (record.type !== "agent_settled") return;
      stop();
      clearTimeout(timer);
      resolve();
    });
    const contract = "\n\n" +
      JSON.stringify({ action: "submit", step: `b${n}`, attempt: `bare-${n}`, output: null });
    void pi.command({ type: "prompt", message: `Submit {"done": true}.${contract}` });
  });
}

export const tailDirOf = (stateDir: string) => join(stateDir, "bare");
