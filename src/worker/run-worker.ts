/**
 * One worker epoch of one run. The host sends the launch envelope; the worker says
 * `worker.ready` (the reply carries the run's committed facts), checks the saved source identity
 * before it imports any workflow module, loads, re-checks the complete mounted map, and then
 * walks the engine's step machine, proposing each durable boundary to the host:
 *
 *   decideNext -> [run.parked budgetExceeded, before a model step over the run's budget] ->
 *   node.started (resolved deadline) -> executeNode -> node.update* ->
 *   node.finished | notification.requested (notify) | node.failed | run.parked (checkpoint,
 *   human decision) ; ... ; [presentation.requested] run.finished
 *
 * It exits after a terminal or park verdict, after a claim-loss verdict (writing nothing), and
 * when the channel closes (the host is gone). After a park on an interactive request the host
 * may keep the process instead (the reply to `worker.exiting`): it then serves the run's
 * validations and its next epoch, each in a fresh instance of the workflow loaded ahead
 * (prepared-child.ts).
 */
import type { RunFacts } from "../protocol/run-facts.ts";
import { budgetStop } from "./budget-check.ts";
import type { WorkerChannel } from "./channel.ts";
import { settleCleanups, stopKeptChildren } from "./child-cleanups.ts";
import { StepInterrupted } from "./step-interrupted.ts";
import { WORKER_EXIT } from "./exit-codes.ts";
import { parseLaunch, type WorkerLaunch } from "./launch.ts";
import { ClaimLostStop, createProposer, type Proposer } from "./proposer.ts";
import { crashPoint } from "../base/crash-point.ts";
import type { LoadOutcome, RunWorkflow, SourceProblem } from "./workflow-port.ts";
// Loaded when used (after worker.ready), like the workflow layer: the start-up path before
// ready stays small.
import type { PreparedRun } from "./prepared-child.ts";

export async function runWorkerEpoch(
  channel: WorkerChannel,
  nextPush?: () => Promise<unknown>,
): Promise<number> {
  let launch = parseLaunch(await channel.firstFrame());
  let prepared: PreparedRun | null = null;
  for (;;) {
    const epoch = await runEpoch(channel, launch, prepared);
    // Kept by the host as the run's prepared process: validate its submissions, then run the
    // next epoch here, each in a fresh instance of the workflow (prepared-child.ts).
    if (!epoch.kept || !nextPush || epoch.loaded === null) return epoch.code;
    const { prepareRun, servePrepared } = await import("./prepared-child.ts");
    prepared ??= epoch.prepared ?? prepareRun(epoch.loaded);
    launch = await servePrepared(channel, nextPush, prepared);
    crashPoint("worker.prepared.launched");
  }
}

interface EpochEnd {
  code: number;
  /** The host keeps this process for the run's next submission and epoch. */
  kept: boolean;
  /** The launch the epoch loaded its workflow under. */
  loaded: WorkerLaunch | null;
  /** A first epoch's kept process, its spares loading since the goodbye. */
  prepared?: PreparedRun | null;
}

async function runEpoch(
  channel: WorkerChannel,
  launch: WorkerLaunch,
  prepared: PreparedRun | null,
): Promise<EpochEnd> {
  // What the acceptance that launched this epoch proposed ahead for it (prepared-child.ts).
  const ahead = prepared === null
    ? null
    : (await import("./prepared-child.ts")).takeAhead(prepared, launch);
  const proposer = createProposer(channel, {
    schema: launch.schema,
    runId: launch.runId,
    generation: launch.generation,
    workerEpoch: launch.workerEpoch,
  }, ahead?.committed ? ahead.sent : 0);
  let ended: { reason: ExitReason; loaded: WorkerLaunch | null };
  try {
    // Its first step committed with the acceptance: the run already waits on that request,
    // and the epoch only says goodbye.
    ended = ahead?.committed ? { reason: "requested", loaded: launch } : await drive(
      launch,
      proposer,
      prepared,
      ahead?.instance ?? null,
    );
  } catch (error) {
    // Another owner holds the run: leave without another word.
    if (error instanceof ClaimLostStop) {
      return { code: WORKER_EXIT.claimLost, kept: false, loaded: null };
    }
    if (error instanceof StepInterrupted) return await leaveInterrupted(proposer, error);
    throw error;
  }
  // Child groups (a headless Pi) are down and unregistered before the worker says goodbye.
  stopKeptChildren();
  await settleCleanups(CLEANUP_BOUND_MS);
  // The durable end was already committed; the answer only says whether the host keeps us. A
  // process that loaded many instances of the workflow asks to go (fresh-instances.ts).
  const spent = prepared?.instances.spent() === true;
  const requested = ended.reason === "requested";
  const goodbye = proposer.propose("worker.exiting", {
    reason: requested ? "parked" : ended.reason,
    ...(spent ? { reusable: false } : {}),
  });
  // Only a park on a model step's request may be kept (a checkpoint, a decision or a headless
  // run's park never is). A kept process parked again: its spares for the next validation and
  // epoch load while the host answers (after the goodbye is written: the fill waits a turn
  // first), not after.
  if (requested && prepared !== null && !spent) prepared.instances.fill();
  // A first epoch that may be kept: what serves it (validations, the next step proposed ahead)
  // is imported meanwhile too (from source that is hundreds of milliseconds under load, which a
  // submission that comes at once waited for), and its spares load as in a kept process.
  const warming = requested && prepared === null && ended.loaded !== null
    ? warmPrepared(ended.loaded)
    : null;
  const bye = await goodbye.catch(() => null);
  const kept = (requested || ended.reason === "parked") &&
    (bye?.result as { prepared?: unknown } | undefined)?.prepared === true;
  return {
    code: WORKER_EXIT.done,
    kept,
    loaded: ended.loaded,
    prepared: kept ? await warming : null,
  };
}

/** The process a first epoch's goodbye may be answered with keeping: its spares start loading. */
function warmPrepared(loaded: WorkerLaunch): Promise<PreparedRun | null> {
  void import("./speculative-step.ts").catch(() => {});
  return import("./prepared-child.ts").then((child) => {
    const run = child.prepareRun(loaded);
    run.instances.fill();
    return run;
  }, () => null);
}

/**
 * An attempt interrupted in this worker (its Pi killed by a signal): its groups are stopped, the
 * host is told why, and the worker exits with no boundary, so the host settles it as a crash
 * (the attempt `interrupted`, run again by the next worker; the run fails after repeated ones,
 * naming `reason`).
 */
async function leaveInterrupted(proposer: Proposer, stop: StepInterrupted): Promise<EpochEnd> {
  stopKeptChildren();
  await settleCleanups(CLEANUP_BOUND_MS);
  await proposer.propose("worker.exiting", { reason: "error", detail: stop.reason.slice(0, 500) })
    .catch(() => null);
  return { code: WORKER_EXIT.failed, kept: false, loaded: null };
}

/** Longest wait for a stopping child group at the end of an epoch (SIGTERM + SIGKILL + slack). */
const CLEANUP_BOUND_MS = 8_000;

/** `requested`: parked on a model step's interactive request (said `parked` to the host). */
type ExitReason = "finished" | "parked" | "requested" | "sourceChanged";

async function drive(
  launch: WorkerLaunch,
  proposer: Proposer,
  prepared: PreparedRun | null,
  /** The instance loaded for this generation while its first step was decided ahead. */
  aheadInstance: Promise<LoadOutcome> | null,
): Promise<{ reason: ExitReason; loaded: WorkerLaunch | null }> {
  // Ready first: the workflow layer is loaded only after, so the host sees a live worker within
  // a bare runtime start-up (it keeps a deadline on the first boundary that follows). It loads
  // while the host commits ready: from the next loop turn, once the ready frame was written (in
  // a bundle an import runs its modules at once). It is this project's engine, no workflow
  // module: those are imported only after the verdict and the source check below.
  const readyVerdict = proposer.propose("worker.ready", { pid: process.pid });
  const loadingPort = new Promise((resolve) => setImmediate(resolve)).then(() =>
    import("./workflow-port.ts")
  );
  loadingPort.catch(() => {}); // a refused ready wins; the load's own failure is thrown below
  const ready = await readyVerdict;
  const port = await loadingPort;
  // Nodes run in the run's project (shell commands, relative paths); a project directory that
  // is gone blocks the run like a changed source. Then, before any workflow module is
  // imported, the saved hashes are compared: changed code never executes. A prepared process
  // compares them again before it takes the fresh instance it loaded ahead for this epoch.
  let sourceProblem = enterProject(launch.projectPath) ?? port.checkSourceBeforeLoad(launch);
  let workflow: RunWorkflow | null = null;
  if (sourceProblem === null) {
    const child = prepared === null ? null : await import("./prepared-child.ts");
    const own = aheadInstance === null ? null : await aheadInstance;
    const loaded = child !== null && prepared !== null &&
        child.sameRunSource(prepared.launch, launch)
      ? own?.ok ? own : await child.takeFresh(prepared)
      : await port.loadRunWorkflow(launch);
    if (loaded.ok) workflow = loaded.workflow.forLaunch(launch);
    else sourceProblem = loaded.problem;
  }
  if (sourceProblem !== null) {
    await proposer.propose("run.parked", {
      reason: sourceProblem.reason,
      detail: sourceProblem.detail,
    });
    return { reason: "sourceChanged", loaded: null };
  }
  const { receiveRunFacts } = await import("./receive-facts.ts");
  const facts = await receiveRunFacts(proposer, ready);
  // A crash may have kept the interrupted attempt's last model call from SQLite: read it back
  // from the run's Pi session before anything decides on the spend (interrupted-usage.ts).
  if (facts.attempts.at(-1)?.state === "interrupted") {
    const { recoverInterruptedUsage } = await import("./interrupted-usage.ts");
    const { runSessionsRoot } = await import("../base/pi-session-files.ts");
    const runFile = launch.piSession ?? null;
    await recoverInterruptedUsage(
      {
        // An interactive run's steps are prompts of its origin session, which is not read here.
        runFile: launch.executionMode === "headless" ? runFile : null,
        root: runSessionsRoot(runFile, process.env.PI_WORKFLOWS_STATE_DIR ?? null, launch.runId),
      },
      facts,
      proposer,
    );
  }
  const reason = await walk(workflow!, { ...facts, projectPath: launch.projectPath }, proposer);
  return { reason, loaded: launch };
}

function enterProject(projectPath: string): SourceProblem | null {
  try {
    process.chdir(projectPath);
    return null;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return {
      reason: "workflowSourceChanged",
      detail: `The run's project directory cannot be entered (${
        typeof code === "string" ? code : "error"
      }): restore it, then resume the run, or cancel it`,
    };
  }
}

async function walk(
  workflow: RunWorkflow,
  initial: RunFacts,
  proposer: Proposer,
): Promise<ExitReason> {
  const facts = workflow.ownFacts(initial);
  const { runNode } = await import("./node-runner.ts");
  // Routing goes on from the worker's own facts: a pure node's close may still wait for its
  // verdict (see runNode); every proposal below waits for all of them first.
  for (;;) {
    const step = workflow.decideNext(facts);
    // A run that ends or parks here has no Pi child left running (the run's kept Pi is stopped,
    // a member's while the next node starts; see child-cleanups.ts).
    if (step.kind !== "startNode") {
      stopKeptChildren();
      await settleCleanups(CLEANUP_BOUND_MS);
    }
    if (step.kind === "complete") {
      // The completion turn's intent is recorded (ineligible) before the terminal commit, which
      // then makes it eligible: no completion turn can start before the run is completed.
      if (step.presentationPrompt !== null) {
        await proposer.propose("presentation.requested", { prompt: step.presentationPrompt });
      }
      await proposer.propose("run.finished", { state: "completed", output: step.output });
      return "finished";
    }
    if (step.kind === "fail") {
      // `cancelled` never routes and never ends a run from a worker: report it as a failure.
      const state = step.outcome === "timed_out" ? "timed_out" : "failed";
      await proposer.propose("run.finished", { state, error: step.error });
      return "finished";
    }
    if (step.kind === "blocked") {
      await proposer.propose("run.parked", {
        reason: "effectAmbiguous",
        detail: step.error.message.slice(0, 1000),
      });
      return "parked";
    }
    if (step.kind === "wait") {
      // The host launches no waiting run; reaching here means the facts and the run disagree.
      throw new Error(`Worker stopped: node ${step.nodeId} is waiting for an answer`);
    }
    const overBudget = await budgetStop(step.nodeKind, facts, proposer);
    if (overBudget !== null) {
      await proposer.propose("run.parked", { reason: "budgetExceeded", detail: overBudget });
      return "parked";
    }
    const result = await runNode(workflow, step, facts, proposer);
    if (result === "parked" || result === "requested") return result;
    facts.attempts.push(result);
  }
}
