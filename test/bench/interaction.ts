/**
 * Interaction benchmark: the real Pi with the package installed runs a workflow of agent steps
 * in its session against a fake model that answers at once. Measured per step:
 *   start_to_prompt   the step's `node.started` commit (host clock, SQLite) to its prompt
 *                     reaching the model (fake server clock, moved onto the wall clock)
 *   submit_to_next    the model's `submit` tool call fully sent to the next step's prompt
 *                     reaching the model (validation child, new worker generation, presentation)
 * beside the baseline measured in the same Pi: one bare RPC prompt round trip (prompt written to
 * Pi's stdin to `agent_settled`, the model answering with text at once), and Pi's own share of
 * it (prompt written to its request at the model), and Pi's turnaround of a tool call that
 * answers at once (`workflow list`: the model's call sent -> the tool result at the model), the
 * floor of a handoff, which is one tool call of the model. Prints one JSON line
 * with medians and p95s and the ratios of the handoff medians to the bare median (target: the
 * handoff overhead median under 0.5 of the bare round trip), also beyond Pi's own share and for
 * the host's own part (`host_handoff_ms`: submission committed -> next request committed) and the
 * commits on that path (`handoff_commits`: the host's commits that wrote rows, from the one that
 * made the submission's event durable to the one that made the next request's, both counted, from
 * the host's PI_WORKFLOWS_COMMIT_TRACE, which names the newest event of each commit; the bench runs
 * one run, so every commit in that window is the handoff's). A submission the run's prepared process
 * validates before it is recorded commits with its verdict (host held-submission.ts), so
 * `host_handoff_ms` is then the time inside that one commit; `host_submit_to_request_ms` counts
 * from the host's read of the submit (a `submit` mark in the same trace) to the next request
 * committed, split at the acceptance's start (`verdict` mark) in `host_breakdown_median_ms`.
 * That ends at the request's event time, inside its transaction: `host_submit_to_answer_ms` ends
 * at the accepted submit's answer built (an `answer` mark, after the COMMIT and what follows it,
 * before the answer is encoded and written).
 * Pi's side of a handoff beside it, on the wall clock: `submit_to_host_read_ms` (the model's submit
 * sent -> the host's read of it: Pi's dispatch of the call, the extension's checks and write) and
 * `answer_to_next_prompt_ms` (the host's accepted answer built -> the next step's request at the
 * model: the answer written and read, the next step presented, Pi's turn from the tool result to
 * the request); and `pi_cpu_per_step_ms`, Pi's CPU over the run per step (`main`: its event-loop
 * thread; `all`: every thread, exited ones too, tick-grained), which the load's waits do not
 * inflate as they do wall times.
 * The bare baseline runs before the workflow, so at a smaller context than any handoff's: it runs
 * again after the run (`*_after_run_ms`, at a context at least as large as the last handoff's), and
 * `context_kb` gives the median context of each series (the requests' messages), so Pi's own cost
 * of a larger context can be told from the handoff's. `step_context_bytes` and
 * `step_context_messages`: what one step adds to the model's context (its message, the model's
 * submit, the tool result).
 *
 *   npm run bench -- interaction [steps]
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeModel, type FakeModelRequest, startFakeModel } from "../support/fake-model.ts";
import { createPiSandbox, REPO_ROOT } from "../support/pi-sandbox.ts";
import { type PiRpc, startPi, stopAllPi } from "../support/pi-rpc.ts";
import { queryState, waitForRunState } from "../support/state-db.ts";
import { stepResponder } from "../support/step-responder.ts";
import { benchArgs, bySize } from "./_figures.ts";

const STEPS = Number(benchArgs[0] ?? bySize(24, 2));
const BARE_ROUNDS = bySize(20, 3);
const PREFIX = "Bench step ";
const BARE_TOOL = "bare tool ";

function chainWorkflow(steps: number): string {
  const nodes = Array.from(
    { length: steps },
    (_, i) => `    s${i + 1}: agent({ prompt: () => "${PREFIX}${i + 1}: answer ok." }),`,
  ).join("\n");
  const edges = Array.from(
    { length: steps - 1 },
    (_, i) => `    { from: "s${i + 1}", to: "s${i + 2}" },`,
  ).join("\n");
  return `import { agent, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "bench-chain",
  startAt: "s1",
  nodes: {
${nodes}
  },
  edges: [
${edges}
  ],
});
`;
}

function stats(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  return {
    median: round(at(0.5)),
    p95: round(at(0.95)),
    min: round(sorted[0]),
    max: round(sorted.at(-1)!),
    n: sorted.length,
  };
}

/** Date.now() minus this process's performance-clock wall time, now (median of samples). */
function wallClockOffset(): number {
  const samples = Array.from(
    { length: 2001 },
    () => Date.now() - (performance.timeOrigin + performance.now()),
  );
  return samples.sort((a, b) => a - b)[1000];
}

/**
 * CPU time of process `pid` in ms: its main thread's from the scheduler's own accounting
 * (`/proc/<pid>/task/<pid>/schedstat`, nanoseconds on the CPU), and all its threads' from
 * `/proc/<pid>/stat` (utime + stime, in clock ticks), which keeps the time of threads that exited
 * (a sum over `/proc/<pid>/task` would lose it); tick-grained, so read over a whole run. Null off
 * Linux.
 */
function piThreadCpuMs(pid: number): { main: number; all: number } | null {
  try {
    const main = Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[0]) /
      1e6;
    // Fields after the command name, which may hold spaces and parentheses: utime is the 14th
    // field of the line, stime the 15th (proc(5)), the 12th and 13th after the name.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return { main, all: (ticks * 1000) / clockTicksPerSecond() };
  } catch {
    return null;
  }
}

let ticksPerSecond: number | undefined;

/** The kernel's clock ticks per second for /proc's CPU times (`getconf CLK_TCK`, usually 100). */
function clockTicksPerSecond(): number {
  ticksPerSecond ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
  return ticksPerSecond;
}

/** The median of byte counts, in KB (tenths). */
function kb(values: number[]): number | null {
  return values.length > 0 ? round(stats(values).median / 1024) : null;
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

/** Bytes of a request's messages as sent (its context without the system prompt's tools). */
function contextBytes(request: FakeModelRequest): number {
  return JSON.stringify(request.messages).length;
}

interface BareFigures {
  /** Prompt written -> agent settled. */
  bare: number[];
  /** Pi's own share of a prompt: written to stdin -> its request at the model (wall clock). */
  bareToRequest: number[];
  /** The model's tool call sent -> the tool's result at the model. */
  bareTool: number[];
  /** The context bytes of each measured prompt's request, and of each tool result's. */
  promptContext: number[];
  toolContext: number[];
}

/**
 * Pi's own baseline in the same Pi: `rounds` bare prompt round trips, then `rounds` turnarounds
 * of a tool that answers at once without the host (`workflow list`), each after a warm-up round.
 * `label` keeps one series' texts apart from another's.
 */
async function bareRounds(
  pi: PiRpc,
  model: FakeModel,
  label: string,
  rounds: number,
): Promise<BareFigures> {
  const figures: BareFigures = {
    bare: [],
    bareToRequest: [],
    bareTool: [],
    promptContext: [],
    toolContext: [],
  };
  for (let i = 0; i <= rounds; i++) {
    const from = pi.records.length;
    const text = `bare prompt ${label}${i}`;
    const started = performance.now();
    const wall = performance.timeOrigin + started;
    await pi.prompt(text);
    await pi.waitForSettled(from);
    if (i === 0) continue;
    figures.bare.push(performance.now() - started);
    const request = model.requests.find((r) => r.lastUserText === text);
    if (request) {
      figures.bareToRequest.push(request.receivedAt - wall);
      figures.promptContext.push(contextBytes(request));
    }
  }
  for (let i = 0; i <= rounds; i++) {
    const from = pi.records.length;
    const text = `${BARE_TOOL}${label}${i}`;
    await pi.prompt(text);
    await pi.waitForSettled(from);
    if (i === 0) continue;
    const call = model.requests.find((r) => r.lastUserText === text && r.lastRole === "user");
    const result = model.requests.find((r) => r.lastUserText === text && r.lastRole === "tool");
    if (call?.respondedAt && result) {
      figures.bareTool.push(result.receivedAt - call.respondedAt);
      figures.toolContext.push(contextBytes(result));
    }
  }
  return figures;
}

async function main(): Promise<void> {
  if (!Number.isInteger(STEPS) || STEPS < 2) throw new Error("steps must be an integer >= 2");
  const model = await startFakeModel({
    script: stepResponder({
      output: () => ({ ok: true }),
      // Pi's own tool-call turnaround: a `workflow list` call (answered by the extension alone).
      decide: (request) => {
        if (!request.lastUserText.startsWith(BARE_TOOL)) return undefined;
        return request.lastRole === "tool"
          ? { kind: "text", text: "listed" }
          : { kind: "tool", name: "workflow", args: { action: "list" } };
      },
    }),
    lifetimeMs: 30 * 60_000,
  });
  const traceDir = mkdtempSync(join(tmpdir(), "piw-commit-trace-"));
  const commitTrace = join(traceDir, "commits");
  const sandbox = createPiSandbox({
    modelBaseUrl: model.baseUrl,
    env: { PI_WORKFLOWS_COMMIT_TRACE: commitTrace },
  });
  try {
    const dir = join(sandbox.project, ".pi", "workflows");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "bench-chain.workflow.ts"), chainWorkflow(STEPS));
    await sandbox.install(REPO_ROOT);
    const pi = await startPi(sandbox);

    // Baseline: bare prompt round trips in the same Pi (a warm-up first), and Pi's tool-call
    // turnaround (bareRounds).
    // Pi's floor inside a handoff: a model's tool call fully sent -> the tool's result at the
    // model, for a tool that answers at once without the host (a warm-up first).
    const before = await bareRounds(pi, model, "", BARE_ROUNDS);
    const { bare, bareToRequest, bareTool } = before;

    const from = pi.records.length;
    const fromRequest = model.requests.length;
    const cpuBefore = piThreadCpuMs(pi.pid);
    await pi.prompt("/workflow bench-chain", 60_000);
    const notice = await pi.waitFor(
      (r) =>
        r.type === "extension_ui_request" &&
        /^Started workflow|^\/workflow:/.test(String(r.message)),
      { from, what: "the start notice" },
    );
    const runId = /\((run-[^)]+)\)/.exec(String(notice.message))?.[1];
    if (!runId) throw new Error(`The bench workflow did not start: ${notice.message}`);
    const state = await waitForRunState(
      sandbox.stateDir,
      runId,
      ["completed", "failed"],
      STEPS * 30_000,
    );
    if (state !== "completed") throw new Error(`The bench run ended ${state}`);

    // Commit times of each step's events (host clock), in order.
    const events = queryState(
      sandbox.stateDir,
      "SELECT seq, type, at, payload_json FROM events WHERE run_id = ? ORDER BY seq",
      runId,
    );
    const started = new Map<string, number>();
    const waiting: number[] = [];
    // Event sequences of each submission and each request, for the commits between them.
    const submittedSeq: number[] = [];
    const waitingSeq: number[] = [];
    const phases = {
      submitted: [] as number[],
      accepted: [] as number[],
      launching: [] as number[],
    };
    for (const row of events) {
      const payload = JSON.parse(row.payload_json as string) as { nodeId?: string };
      const at = row.at as number;
      if (row.type === "node.started") started.set(payload.nodeId!, at);
      if (row.type === "run.waiting") {
        waiting.push(at);
        waitingSeq.push(row.seq as number);
      }
      if (row.type === "interaction.submitted") {
        phases.submitted.push(at);
        submittedSeq.push(row.seq as number);
      }
      if (row.type === "interaction.accepted") phases.accepted.push(at);
      if (row.type === "run.launching") phases.launching.push(at);
    }
    const requests = model.requests.slice(fromRequest);
    // The fake model's times are this process's performance clock; the host's commit times are
    // its Date.now(). The two drift apart by milliseconds over a bench (the wall clock is
    // slewed), so model times are moved onto the wall clock for every comparison with a commit.
    const offset = wallClockOffset();
    const promptOf = (step: number): FakeModelRequest | undefined =>
      requests.find((r) => r.lastRole === "user" && r.lastUserText.startsWith(`${PREFIX}${step}:`));
    const startToPrompt: number[] = [];
    // node.started -> the request committed (worker + host), then -> the prompt at the model
    // (the host's push, the extension's claim and send, Pi's turn start).
    const startBreakdown = {
      started_to_requested: [] as number[],
      requested_to_prompt: [] as number[],
    };
    const submitToNext: number[] = [];
    // The context of each next step's request, and what one step added to it (the step's
    // message, the model's submit, its result).
    const handoffContext: number[] = [];
    const stepAdds = { bytes: [] as number[], messages: [] as number[] };
    // The host's own share: the submission committed -> the next step's request committed.
    const hostHandoff: number[] = [];
    // The submit read by the host -> the next step's request committed.
    const hostSubmitToRequest: number[] = [];
    // The submit read by the host -> its accepted answer built (the COMMIT and after it too).
    const hostSubmitToAnswer: number[] = [];
    // Pi's side of a handoff, on the wall clock: the model's submit sent -> the host's read of it
    // (Pi's dispatch of the call, the extension's checks and write), and the host's accepted
    // answer built -> the next step's request at the model (the answer written and read, the
    // extension's presentation of the next step, Pi's turn from the tool result to the request).
    const piSide = { submit_to_host_read: [] as number[], answer_to_next_prompt: [] as number[] };
    const handoffCommits: number[] = [];
    // One line per commit that wrote rows: its time and the newest event sequence after it.
    const traced = existsSync(commitTrace)
      ? readFileSync(commitTrace, "utf8").split("\n").filter(Boolean).map((line) => line.split(" "))
      : [];
    // Commit lines name an event sequence; mark lines a label (transactions.ts traceMark).
    const commitSeqs = traced.filter(([, what]) => /^\d+$/.test(what)).map(([, seq]) =>
      Number(seq)
    );
    // Each submit's read by the host (its handler's start), on the commits' clock.
    const submitReads = traced.filter(([, what]) => what === "submit").map(([at]) => Number(at));
    // Each acceptance's start (its verdict read, its commit begun).
    const verdictReads = traced.filter(([, what]) => what === "verdict").map(([at]) => Number(at));
    const answers = traced.filter(([, what]) => what === "answer").map(([at]) => Number(at));
    const hostBreakdown = {
      submit_read_to_verdict: [] as number[],
      verdict_to_request: [] as number[],
    };
    /** The commit that made event `seq` durable. */
    const commitOf = (seq: number) => commitSeqs.findIndex((s) => s >= seq);
    const breakdown = {
      submit_to_submitted: [] as number[],
      submitted_to_accepted: [] as number[],
      accepted_to_launching: [] as number[],
      launching_to_started: [] as number[],
    };
    for (let step = 1; step <= STEPS; step++) {
      const prompt = promptOf(step);
      const at = started.get(`s${step}`);
      if (!prompt || at === undefined) {
        throw new Error(`Step ${step} left no prompt or node.started`);
      }
      startToPrompt.push(prompt.receivedAt + offset - at);
      if (waiting.length === STEPS) {
        startBreakdown.started_to_requested.push(waiting[step - 1] - at);
        startBreakdown.requested_to_prompt.push(prompt.receivedAt + offset - waiting[step - 1]);
      }
      if (step === STEPS) continue;
      const submit = requests.find((r) =>
        r.reply?.kind === "tool" && (r.reply.args as { step?: string }).step === `s${step}` &&
        (r.reply.args as { action?: string }).action === "submit"
      );
      const next = promptOf(step + 1);
      if (!submit?.respondedAt || !next) {
        throw new Error(`Step ${step} has no submit or next prompt`);
      }
      submitToNext.push(next.receivedAt - submit.respondedAt);
      handoffContext.push(contextBytes(next));
      stepAdds.bytes.push(contextBytes(next) - contextBytes(prompt));
      stepAdds.messages.push(next.messages.length - prompt.messages.length);
      const i = step - 1;
      breakdown.submit_to_submitted.push(phases.submitted[i] - (submit.respondedAt + offset));
      breakdown.submitted_to_accepted.push(phases.accepted[i] - phases.submitted[i]);
      // run.launching of generation step + 1 (the first launching is the run's start).
      breakdown.accepted_to_launching.push(phases.launching[step] - phases.accepted[i]);
      breakdown.launching_to_started.push(started.get(`s${step + 1}`)! - phases.launching[step]);
      if (waiting.length === STEPS) {
        hostHandoff.push(waiting[step] - phases.submitted[i]);
        const read = submitReads.find((at) => at >= waiting[step - 1]);
        if (read !== undefined) {
          hostSubmitToRequest.push(waiting[step] - read);
          const answer = answers.find((at) => at >= waiting[step]);
          piSide.submit_to_host_read.push(read - (submit.respondedAt + offset));
          if (answer !== undefined) {
            hostSubmitToAnswer.push(answer - read);
            piSide.answer_to_next_prompt.push(next.receivedAt + offset - answer);
          }
          const verdict = verdictReads.find((at) => at >= read);
          if (verdict !== undefined && verdict <= waiting[step]) {
            hostBreakdown.submit_read_to_verdict.push(verdict - read);
            hostBreakdown.verdict_to_request.push(waiting[step] - verdict);
          }
        }
        const first = commitOf(submittedSeq[i]);
        const last = commitOf(waitingSeq[step]);
        if (first >= 0 && last >= first) handoffCommits.push(last - first + 1);
      }
    }
    // The same baseline again after the run, at a context at least as large as any handoff's
    // (the run's whole chain is one agent run: it settles after the last step's closing text).
    const lastResult = await pi.waitFor(
      (r) =>
        r.type === "tool_execution_end" &&
        String((r.result as { content?: { text?: string }[] })?.content?.[0]?.text)
          .startsWith(`Output accepted for step "s${STEPS}"`),
      { from, what: "the last step's tool result" },
    );
    const cpuAfter = piThreadCpuMs(pi.pid);
    await pi.waitForSettled(pi.records.indexOf(lastResult));
    const after = await bareRounds(pi, model, "after run ", BARE_ROUNDS);
    await pi.stop();

    const bareStats = stats(bare);
    const a = stats(startToPrompt);
    const b = stats(submitToNext);
    console.log(JSON.stringify({
      bench: "interaction",
      steps: STEPS,
      bare_prompt_round_trip_ms: bareStats,
      start_to_prompt_ms: a,
      submit_to_next_prompt_ms: b,
      bare_prompt_to_request_ms: stats(bareToRequest),
      bare_tool_turnaround_ms: stats(bareTool),
      // Pi's own floor of a handoff (its tool-call turnaround) against the same baseline: the
      // host's part can only add to it.
      ratio_pi_tool_floor: Math.round((stats(bareTool).median / bareStats.median) * 100) / 100,
      // The handoff beyond that floor: what the host, the worker and the extension add.
      ratio_submit_to_next_beyond_pi_tool: Math.round(
        ((b.median - stats(bareTool).median) / bareStats.median) * 100,
      ) / 100,
      ratio_start_to_prompt: Math.round((a.median / bareStats.median) * 100) / 100,
      // The handoff beyond what Pi spends on any prompt before its request reaches the model.
      ratio_start_to_prompt_beyond_pi: Math.round(
        ((a.median - stats(bareToRequest).median) / bareStats.median) * 100,
      ) / 100,
      ratio_submit_to_next: Math.round((b.median / bareStats.median) * 100) / 100,
      // Likewise beyond Pi's own prompt -> request share of the next step's prompt.
      ratio_submit_to_next_beyond_pi: Math.round(
        ((b.median - stats(bareToRequest).median) / bareStats.median) * 100,
      ) / 100,
      // The baseline measured again after the run, at a context at least as large as the
      // handoffs' (`context_kb`): Pi's own cost of a larger context, beside the figures above
      // (the target's formula keeps the baseline taken before the run).
      bare_prompt_round_trip_after_run_ms: stats(after.bare),
      bare_prompt_to_request_after_run_ms: stats(after.bareToRequest),
      bare_tool_turnaround_after_run_ms: stats(after.bareTool),
      ratio_submit_to_next_beyond_pi_after_run: Math.round(
        ((b.median - stats(after.bareToRequest).median) / stats(after.bare).median) * 100,
      ) / 100,
      // Medians of the requests' message bytes (system prompt included, tool schemas not), in KB.
      context_kb: {
        bare_prompt: kb(before.promptContext),
        bare_tool: kb(before.toolContext),
        handoff: kb(handoffContext),
        bare_prompt_after_run: kb(after.promptContext),
        bare_tool_after_run: kb(after.toolContext),
      },
      // What one step adds to the model's context (median over the handoffs).
      step_context_bytes: stats(stepAdds.bytes).median,
      step_context_messages: stats(stepAdds.messages).median,
      host_handoff_ms: hostHandoff.length > 0 ? stats(hostHandoff) : null,
      handoff_commits: handoffCommits.length > 0 ? stats(handoffCommits) : null,
      host_submit_to_request_ms: hostSubmitToRequest.length > 0 ? stats(hostSubmitToRequest) : null,
      host_submit_to_answer_ms: hostSubmitToAnswer.length > 0 ? stats(hostSubmitToAnswer) : null,
      // Pi's CPU per step over the run (its main thread; all its threads), from the workflow's
      // start to the last step's result: Pi's and the extension's work per handoff, without the
      // waits that load adds to the wall-clock figures.
      pi_cpu_per_step_ms: cpuBefore && cpuAfter
        ? {
          main: round((cpuAfter.main - cpuBefore.main) / STEPS),
          all: round((cpuAfter.all - cpuBefore.all) / STEPS),
        }
        : null,
      submit_to_host_read_ms: piSide.submit_to_host_read.length > 0
        ? stats(piSide.submit_to_host_read)
        : null,
      answer_to_next_prompt_ms: piSide.answer_to_next_prompt.length > 0
        ? stats(piSide.answer_to_next_prompt)
        : null,
      ratio_host_handoff: hostHandoff.length > 0
        ? Math.round((stats(hostHandoff).median / bareStats.median) * 100) / 100
        : null,
      start_breakdown_median_ms: Object.fromEntries(
        Object.entries(startBreakdown).map(([name, values]) => [name, stats(values).median]),
      ),
      host_breakdown_median_ms: Object.fromEntries(
        Object.entries(hostBreakdown).map(([name, values]) => [
          name,
          values.length > 0 ? stats(values).median : null,
        ]),
      ),
      submit_breakdown_median_ms: Object.fromEntries(
        Object.entries(breakdown).map(([name, values]) => [name, stats(values).median]),
      ),
      target_ratio: 0.5,
    }));
  } finally {
    await stopAllPi();
    await sandbox.cleanup();
    await model.close();
    rmSync(traceDir, { recursive: true, force: true });
  }
}

await main();
