/**
 * One worker epoch of one run. The host sends the launch envelope; the worker checks the saved
 * source identity before it loads any workflow module, loads, re-checks the complete mounted map,
 * says `worker.ready` (the reply carries the run's committed facts) and then walks the engine's
 * step machine, proposing each durable boundary to the host:
 *
 *   decideNext -> node.started (resolved deadline) -> executeNode -> node.update* ->
 *   node.finished | node.failed | run.parked (checkpoint, human decision) ; ... ; run.finished
 *
 * It exits after a terminal or park verdict, after a claim-loss verdict (writing nothing), and
 * when the channel closes (the host is gone).
 */
import type { RunFacts } from "../protocol/run-facts.ts";
import type { WorkerChannel } from "./channel.ts";
import { parseLaunch, type WorkerLaunch } from "./launch.ts";
import { runNode } from "./node-runner.ts";
import { ClaimLostStop, createProposer, type Proposer } from "./proposer.ts";
import { checkSourceBeforeLoad, loadRunWorkflow, type RunWorkflow } from "./workflow-port.ts";

/** Exit codes of `pi-workflows worker`. The host reads them only as diagnostics. */
export const WORKER_EXIT = {
  done: 0,
  failed: 1,
  usage: 2,
  claimLost: 3,
  channelClosed: 4,
} as const;

export async function runWorkerEpoch(channel: WorkerChannel): Promise<number> {
  const launch = parseLaunch(await channel.firstFrame());
  const proposer = createProposer(channel, {
    schema: launch.schema,
    runId: launch.runId,
    generation: launch.generation,
    workerEpoch: launch.workerEpoch,
  });
  try {
    return await drive(launch, proposer);
  } catch (error) {
    if (error instanceof ClaimLostStop) return WORKER_EXIT.claimLost;
    throw error;
  }
}

async function drive(launch: WorkerLaunch, proposer: Proposer): Promise<number> {
  // Changed code never executes: hashes are compared before any import.
  const before = await checkSourceBeforeLoad(launch);
  let workflow: RunWorkflow | null = null;
  let sourceProblem = before;
  if (sourceProblem === null) {
    const loaded = await loadRunWorkflow(launch);
    if (loaded.ok) workflow = loaded.workflow;
    else sourceProblem = loaded.problem;
  }
  const ready = await proposer.propose("worker.ready", { pid: process.pid });
  if (sourceProblem !== null) {
    await proposer.propose("run.parked", {
      reason: sourceProblem.reason,
      detail: sourceProblem.detail,
    });
    return WORKER_EXIT.done;
  }
  if (!ready.facts) throw new Error("Worker not started: the ready reply carried no run facts");
  return await walk(workflow!, ready.facts, proposer);
}

async function walk(workflow: RunWorkflow, initial: RunFacts, proposer: Proposer) {
  const facts: RunFacts = { ...initial, attempts: [...initial.attempts] };
  for (;;) {
    const step = workflow.decideNext(facts);
    if (step.kind === "complete") {
      await proposer.propose("run.finished", {
        state: "completed",
        output: step.output,
        presentationPrompt: step.presentationPrompt ?? undefined,
      });
      return WORKER_EXIT.done;
    }
    if (step.kind === "fail") {
      await proposer.propose("run.finished", { state: step.outcome, error: step.error });
      return WORKER_EXIT.done;
    }
    if (step.kind === "blocked") {
      await proposer.propose("run.parked", {
        reason: "effectAmbiguous",
        detail: step.error.message.slice(0, 1000),
      });
      return WORKER_EXIT.done;
    }
    if (step.kind === "wait") {
      // The host launches no waiting run; reaching here means the facts and the run disagree.
      throw new Error(`Worker stopped: node ${step.nodeId} is waiting for an answer`);
    }
    const attempt = await runNode(workflow, step, facts, proposer);
    if (attempt === "parked") return WORKER_EXIT.done;
    facts.attempts.push(attempt);
  }
}
