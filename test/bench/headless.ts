/**
 * `npm run bench -- headless`: what a headless agent step costs beyond Pi itself, with the real
 * Pi and the fake model answering at once (a `submit` of the step's contract). Per run of a
 * one-agent-step workflow through the real supervision (host half in this process, worker from
 * source):
 *
 *   start_ms   node.started committed -> the step prompt at the model
 *   finish_ms  the model's submit sent -> node.finished committed
 *
 * Beside it, in the same run and interleaved, a bare Pi measured the same way: spawn
 * `pi --mode rpc` with the same arguments and the bridge, prompt at once -> the prompt at the
 * model (bare_start_ms), and the model's submit sent -> the bridge receiving the tool call
 * (bare_tool_ms), answered at once. The host's share is what the headless path adds to those:
 * (start_ms - bare_start_ms) + (finish_ms - bare_tool_ms), medians; target: under 0.2 of the
 * bare start-and-prompt time.
 *
 * Then, in the same run, runs of ten consecutive agent steps (one conversation, one kept Pi)
 * beside a bare Pi with the same arguments (_headless-steps.ts): `step_ms` of steps 2-10 against
 * `bare_warm_ms`, a prompt round trip on an already running Pi (target: median ratio <= 1.5),
 * and the first step against a bare Pi start, and `commits_per_step`: the host's commits from
 * step 1's `node.finished` to step 10's (that one counted) over 9, each step recording the usage
 * the fake model reports (recording it adds no commit: a step that submits in its first model
 * call commits its start and its outcome, the usage riding on the outcome). Prints one JSON line.
 *
 *   npm run bench -- headless [runs=10] [step-rounds=3]
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createSupervision } from "../../src/host/host-supervision.ts";
import { readFrames, writeFrame } from "../../src/protocol/framing.ts";
import {
  bridgeHello,
  bridgeResult,
  parseBridgeCall,
} from "../../src/protocol/pi-bridge-messages.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import { closeStateStore } from "../../src/state/store.ts";
import { queryAll, queryOne } from "../../src/state/statements.ts";
import { ensureBridgeFile } from "../../src/worker/pi-bridge-file.ts";
import { BRIDGE_TOOL } from "../../src/worker/pi-bridge-tool.ts";
import { spawnPiChild } from "../../src/worker/pi-child.ts";
import { headlessPiArgs } from "../../src/worker/headless-pi-args.ts";
import { runSessionArgs } from "../../src/worker/headless-session.ts";
import { barePi, STEPS, stepsWorkflow, stepTimes, tailDirOf } from "./_headless-steps.ts";
import { type FakeModelRequest, startFakeModel } from "../support/fake-model.ts";
import { createPiSandbox, PI_CLI } from "../support/pi-sandbox.ts";
import { submitCall, submitContractIn } from "../support/step-responder.ts";
import { benchHostContext, enqueueResolved } from "./_host-context.ts";
import { benchArgs, bySize, round, stats } from "./_figures.ts";

const RUNS = Number(benchArgs[0] ?? bySize(10, 1));
const STEP_ROUNDS = Number(benchArgs[1] ?? bySize(3, 1));
/** Warm-ups steady the figures; the smoke's figures are not read, so it runs none. */
const WARMUPS = bySize(2, 0);

/** When the fake model answered each request (ms, same clock as `receivedAt`). */
const answeredAt = new Map<number, number>();
const now = () => performance.timeOrigin + performance.now();
const model = await startFakeModel({
  script: (request: FakeModelRequest) => {
    answeredAt.set(request.index, now());
    const contract = submitContractIn(request.lastUserText);
    if (request.lastRole === "tool" || !contract) return { kind: "text", text: "done" };
    return submitCall(contract, { done: true });
  },
});
const sandbox = createPiSandbox({ modelBaseUrl: model.baseUrl });
const stateDir = sandbox.stateDir;
mkdirSync(stateDir, { recursive: true, mode: 0o700 });
const workflowPath = join(sandbox.project, "one-agent.workflow.ts");
writeFileSync(
  workflowPath,
  `import { agent, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "one-agent",
  startAt: "work",
  nodes: { work: agent({ prompt: "Submit {\\"done\\": true}.", expectedOutput: '{"done": true}' }) },
  edges: [],
});
`,
);

// Every commit of this process (the host half) is traced: commits per step come from it.
const commitTrace = join(stateDir, "commits.trace");
process.env.PI_WORKFLOWS_COMMIT_TRACE = commitTrace;
const ctx = benchHostContext(stateDir, 30_000);
const store = ctx.store;
const supervision = createSupervision(ctx, { childEnv: sandbox.env });
/** The headless child's arguments, on a session file of its own (`n` names it). */
const piArgs = (n: string) =>
  headlessPiArgs({
    session: runSessionArgs(join(stateDir, "bare-sessions", `${n}.jsonl`)),
    context: "none",
    bridgeFile: ensureBridgeFile(stateDir),
    recorded: [],
  });

/** The first request at index >= `from` whose step message names `attempt` (or any, if null). */
const requestFor = (from: number, attempt: string | null) =>
  model.waitForRequest(
    (r) => r.lastRole === "user" && (attempt === null || r.lastUserText.includes(attempt)),
    { from, timeoutMs: 60_000 },
  );

async function headlessOnce(
  resolved: Extract<
    Awaited<ReturnType<typeof supervision.resolve>>,
    { ok: true }
  >,
): Promise<{ start: number; finish: number }> {
  const from = model.requests.length;
  const { runId } = enqueueResolved(store, resolved, {
    projectPath: sandbox.project,
    binding: { executionMode: "headless", pi: { command: PI_CLI, args: [] } },
  });
  supervision.wake();
  const state = () =>
    queryOne<{ state: string }>(store, "SELECT state FROM runs WHERE run_id = :runId", { runId })
      ?.state;
  const done = await waitUntil(
    () => state() !== "queued" && state() !== "running" && supervision.activeWorkerCount() === 0,
    90_000,
  );
  if (!done || state() !== "completed") throw new Error(`Headless run ended ${state()}`);
  const at = (type: string) =>
    queryOne<{ at: number }>(
      store,
      "SELECT at FROM events WHERE run_id = :runId AND type = :type ORDER BY seq LIMIT 1",
      { runId, type },
    )!.at;
  const prompt = await requestFor(from, null);
  return {
    start: prompt.receivedAt - at("node.started"),
    finish: at("node.finished") - answeredAt.get(prompt.index)!,
  };
}

async function bareOnce(): Promise<{ start: number; tool: number }> {
  const from = model.requests.length;
  const spawnedAt = now();
  const pi = spawnPiChild({
    command: PI_CLI,
    args: piArgs(`cold-${from}`),
    cwd: sandbox.project,
    env: { ...process.env, ...sandbox.env },
    tail: { dir: join(stateDir, "bare"), stem: "bare", maxBytes: 256 * 1024 },
  });
  try {
    void writeFrame(pi.bridge, bridgeHello(BRIDGE_TOOL));
    const called = (async () => {
      for await (const frame of readFrames(pi.bridge)) {
        const call = frame.ok ? parseBridgeCall(frame.value) : null;
        if (!call?.ok) continue;
        const calledAt = now();
        await writeFrame(
          pi.bridge,
          bridgeResult(call.value.callId, { ok: true, text: "Accepted.", terminate: true }),
        );
        return calledAt;
      }
      throw new Error("The bare Pi closed its bridge before a tool call");
    })();
    const contract = "\n\n" +
      JSON.stringify({ action: "submit", step: "work", attempt: `bare-${from}`, output: null });
    void pi.command({ type: "prompt", message: `Submit {"done": true}.${contract}` });
    const prompt = await requestFor(from, null);
    const calledAt = await called;
    return { start: prompt.receivedAt - spawnedAt, tool: calledAt - answeredAt.get(prompt.index)! };
  } finally {
    await pi.stop(1_000);
  }
}

/** Ten-step runs and bare Pis, interleaved (`STEP_ROUNDS` of each). */
async function measureSteps() {
  const path = join(sandbox.project, "ten-agents.workflow.ts");
  writeFileSync(path, stepsWorkflow());
  const resolved = await supervision.resolve({ workflow: path, input: {}, cwd: sandbox.project });
  if (!resolved.ok) throw new Error(`Resolve failed: ${resolved.message}`);
  const stepMs: number[] = [];
  const firstMs: number[] = [];
  const warmMs: number[] = [];
  const startMs: number[] = [];
  const commitsPerStep: number[] = [];
  for (let round = 0; round < STEP_ROUNDS; round++) {
    const bare = await barePi(PI_CLI, piArgs(`warm-${round}`), {
      cwd: sandbox.project,
      env: { ...process.env, ...sandbox.env },
      tailDir: tailDirOf(stateDir),
    }, STEPS);
    startMs.push(bare.startMs);
    warmMs.push(...bare.warmMs);
    const { runId } = enqueueResolved(store, resolved, {
      projectPath: sandbox.project,
      binding: { executionMode: "headless", pi: { command: PI_CLI, args: [] } },
    });
    supervision.wake();
    const state = () =>
      queryOne<{ state: string }>(store, "SELECT state FROM runs WHERE run_id = :runId", { runId })
        ?.state;
    const done = await waitUntil(
      () => state() !== "queued" && state() !== "running" && supervision.activeWorkerCount() === 0,
      180_000,
    );
    if (!done || state() !== "completed") throw new Error(`Ten-step run ended ${state()}`);
    const times = stepTimes(store, runId);
    firstMs.push(times.first);
    stepMs.push(...times.later);
    commitsPerStep.push(commitsBetweenSteps(runId));
  }
  const step = stats(stepMs);
  const warm = stats(warmMs);
  const first = stats(firstMs);
  const bareStart = stats(startMs);
  return {
    step_rounds: STEP_ROUNDS,
    step_median_ms: step.median,
    step_p95_ms: step.p95,
    bare_warm_median_ms: warm.median,
    bare_warm_p95_ms: warm.p95,
    step_ratio: Math.round((step.median / warm.median) * 1000) / 1000,
    target_step_ratio: 1.5,
    first_step_median_ms: first.median,
    bare_pi_start_median_ms: bareStart.median,
    first_step_ratio: Math.round((first.median / bareStart.median) * 1000) / 1000,
    commits_per_step: stats(commitsPerStep).median,
  };
}

/**
 * Host commits per step over steps 2-10 of a finished run: the commits after step 1's
 * `node.finished` commit up to step 10's, that one counted (a commit's trace time is the first
 * one at or after its events' time: the host is the only writer).
 */
function commitsBetweenSteps(runId: string): number {
  const finished = queryAll<{ at: number }>(
    store,
    "SELECT at FROM events WHERE run_id = :runId AND type = 'node.finished' ORDER BY seq",
    { runId },
  ).map((r) => r.at);
  // `<time> <newest event seq>` per commit (src/state/transactions.ts): the time here.
  const traced = readFileSync(commitTrace, "utf8").split("\n").filter((l) => l !== "")
    .map((line) => Number(line.split(" ")[0]));
  const commitOf = (at: number) => traced.findIndex((t) => t >= at);
  const commits = commitOf(finished[finished.length - 1]) - commitOf(finished[0]);
  return Math.round((commits / (finished.length - 1)) * 100) / 100;
}

try {
  const resolved = await supervision.resolve({
    workflow: workflowPath,
    input: {},
    cwd: sandbox.project,
  });
  if (!resolved.ok) throw new Error(`Resolve failed: ${resolved.message}`);
  supervision.start();
  const start: number[] = [];
  const finish: number[] = [];
  const bareStart: number[] = [];
  const bareTool: number[] = [];
  for (let i = 0; i < RUNS + WARMUPS; i++) {
    // Interleaved so both see the same machine load; the first rounds warm caches up.
    const bare = await bareOnce();
    const headless = await headlessOnce(resolved);
    if (i < WARMUPS) continue;
    bareStart.push(bare.start);
    bareTool.push(bare.tool);
    start.push(headless.start);
    finish.push(headless.finish);
  }
  const steps = await measureSteps();
  const s = stats(start);
  const f = stats(finish);
  const bs = stats(bareStart);
  const bt = stats(bareTool);
  const hostShare = (s.median - bs.median) + (f.median - bt.median);
  console.log(JSON.stringify({
    bench: "headless",
    runs: RUNS,
    start_median_ms: s.median,
    start_p95_ms: s.p95,
    finish_median_ms: f.median,
    finish_p95_ms: f.p95,
    bare_start_median_ms: bs.median,
    bare_start_p95_ms: bs.p95,
    bare_tool_median_ms: bt.median,
    bare_tool_p95_ms: bt.p95,
    host_share_ms: round(hostShare),
    ratio: Math.round((hostShare / bs.median) * 1000) / 1000,
    target_ratio: 0.2,
    ...steps,
  }));
} finally {
  await supervision.shutdown();
  closeStateStore(store);
  await sandbox.cleanup();
  await model.close();
}
