/**
 * Validation children: an interactive submission is checked by workflow code, which the host
 * never runs. For each `validating` submission the host starts `pi-workflows worker --validate`
 * (own process group, bounded output, fd-3 framing), writes one validate request carrying a
 * launch header (run, the generation the request waits under, a fresh worker epoch) and the
 * first piece of the run's facts when it fits, answers its `facts.next` asks with the others,
 * and reads ONE verdict back. Each message's header is fenced like any worker message before its
 * payload is read; then the verdict commits (`acceptSubmission` / `rejectSubmission`) and the
 * child gets its reply and exits. A child that stops, hangs past the deadline or breaks the
 * protocol rejects the provisional submission with a clear reason: the request stays ready for a
 * corrected retry.
 *
 * One child per submission at a time; asking again joins it. The promise resolves once the
 * submission is decided (or the host shuts down, leaving it `validating` for recovery step 9).
 */
import { FrameError, MAX_FRAME_BYTES, writeFrame } from "../../protocol/framing.ts";
import { VALIDATE_REQUEST_SCHEMA } from "../../protocol/validate-messages.ts";
import type { WorkerLaunch } from "../../protocol/worker-launch.ts";
import { envelopeBase } from "./launch-worker.ts";
import {
  parseWorkerHeader,
  parseWorkerPayload,
  type WorkerMessage,
  workerReply,
} from "../../protocol/worker-messages.ts";
import { readValidationJob, type ValidationJob } from "../../state/interaction-queries.ts";
import {
  acceptVerdict,
  judgeVerdict,
  rejectVerdict,
  type Verdict,
} from "../worker-messages/interaction-verdicts.ts";
import type { HostContext } from "../host-context.ts";
import type { ProcessRegistry } from "./process-registry.ts";
import {
  type ChildCommand,
  readerOf,
  spawnChild,
  type SupervisedChild,
} from "./children/spawn-child.ts";
import { retireChild } from "./children/retire-child.ts";
import { staleness } from "./children/epoch-fence.ts";
import { armChildDeadline } from "./children/child-deadline.ts";
import type { PreparedChild, PreparedChildren } from "./prepared-children.ts";
import { recordedRunEnvironment } from "./children/child-environment.ts";
import { crashPoint } from "../../base/crash-point.ts";
import { afterGroupCommit } from "../../state/transactions.ts";
import { runFactsText } from "../../state/run-facts-text.ts";
import { createFactsStream, type FactsStream } from "../worker-messages/facts-stream.ts";
import { logError } from "../host-log.ts";
import { readRunRow } from "../../state/protected-write.ts";
import type { AheadStart } from "../worker-messages/speculative-start.ts";

/** How long the node's rules may take once the child is up (beyond the start-up deadline). */
export const VALIDATE_BOUND_MS = 60_000;

export interface ValidationDeps {
  registry: ProcessRegistry;
  env(runId: string): NodeJS.ProcessEnv;
  command?: ChildCommand;
  /** A submission was accepted: its run is launchable again. */
  accepted(runId: string): void;
  /**
   * An acceptance validated in the run's prepared process: the verdict (`accept`, false when
   * stale) and the run's next epoch in that process commit together (accepted-launch.ts). The
   * child is the callee's from then on; returns the epoch's supervision start, or null.
   */
  launchAccepted?(
    runId: string,
    child: PreparedChild,
    accept: () => boolean,
    ahead?: AheadStart,
  ): (() => void) | null;
  /** Prepared run processes: a run's own waits there, its workflow already loaded. */
  prepared?: PreparedChildren;
  /**
   * When the run's worker committed the request but has not said goodbye yet (a submission can
   * be that fast): resolves once the host kept its process or it is gone. Null otherwise.
   */
  epochEnding?(runId: string): Promise<unknown> | null;
}

export interface Validations {
  /** Starts (or joins) the child of a validating submission; resolves once it is decided. */
  validate(submissionId: string): Promise<void>;
  /** Children running now. */
  count(): number;
  /** Stops the run's children (the run was cancelled: their verdicts could change nothing). */
  stopRun(runId: string): Promise<void>;
  /** Stops every child (host shutdown); their submissions stay `validating`. */
  shutdown(): Promise<void>;
}

export function createValidations(ctx: HostContext, deps: ValidationDeps): Validations {
  /** Per submission: `decided` once the verdict committed, `done` once the child is gone. */
  const running = new Map<
    string,
    { runId: string; decided: Promise<void>; done: Promise<void>; stop(): void }
  >();
  let closing = false;

  const validate = (submissionId: string): Promise<void> => {
    const existing = running.get(submissionId);
    if (existing) return existing.decided;
    if (closing) return Promise.resolve();
    const job = readValidationJob(ctx.store, submissionId);
    if (!job) return Promise.resolve();
    const stopper = { stop: () => {} };
    let markDecided = () => {};
    const decided = new Promise<void>((resolve) => (markDecided = resolve));
    // The caller hears the verdict at once; stopping the child's group happens after.
    const done = runChild(ctx, deps, job, stopper, markDecided).catch((error) => {
      ctx.log("validation.failed", { run: job.runId, error: logError(error) });
    }).finally(() => {
      markDecided();
      running.delete(submissionId);
    });
    running.set(submissionId, { runId: job.runId, decided, done, stop: () => stopper.stop() });
    return decided;
  };

  return {
    validate,
    count: () => running.size,
    async stopRun(runId) {
      const children = [...running.values()].filter((child) => child.runId === runId);
      for (const child of children) child.stop();
      await Promise.all(children.map((child) => child.done));
    },
    async shutdown() {
      closing = true;
      const all = [...running.values()];
      for (const child of all) child.stop();
      await Promise.all(all.map((child) => child.done));
    },
  };
}

/** Why an exchange ended without a verdict; `stopped` when the host stopped it (no rejection). */
interface Broken {
  failure: string | null;
  tooLarge: boolean;
  stopped: boolean;
}

async function runChild(
  ctx: HostContext,
  deps: ValidationDeps,
  job: ValidationJob,
  stopper: { stop(): void },
  decidedHook: () => void,
): Promise<void> {
  const workerEpoch = ctx.ids.next("vep");
  const launch = validationLaunch(job, workerEpoch);
  const ending = deps.epochEnding?.(job.runId);
  if (ending) {
    await ending;
    // Cancelled or timed out meanwhile: nothing to validate any more.
    if (!readValidationJob(ctx.store, job.submissionId)) return;
  }
  const broken: Broken = { failure: null, tooLarge: false, stopped: false };
  const next: { epoch: (() => void) | null } = { epoch: null };
  // The run's prepared process (its last worker, workflow loaded) when one waits; else a fresh
  // child. The exchange below is the same for both.
  const prepared = deps.prepared?.borrow(job.runId) ?? null;
  const spawned = prepared?.spawned ?? spawnChildFor(ctx, deps, job, workerEpoch, () => {
    broken.failure = "its output passed the capture limit";
    spawned.channel.destroy();
  });
  stopper.stop = () => {
    broken.stopped = true;
    spawned.channel.destroy();
  };
  const boundMs = (prepared ? 0 : ctx.options.workerStartupMs) + VALIDATE_BOUND_MS;
  const deadline = armChildDeadline(spawned, boundMs, () => {
    broken.failure = `it gave no verdict within ${boundMs} ms`;
  });
  // A prepared process may propose the epoch an acceptance launches in it ahead, under this
  // header (speculative-start.ts).
  const ahead = prepared && deps.launchAccepted ? aheadHeader(ctx, job) : null;
  try {
    const facts = await sendRequest(ctx, job, launch, spawned, ahead, broken);
    const decided = await readVerdict(ctx, deps, job, launch, spawned, prepared, facts, ahead, {
      fail: (why) => (broken.failure ??= why),
      decided: decidedHook,
      launched: (start) => (next.epoch = start),
    });
    if (!decided && !broken.stopped) {
      rejectVerdict(ctx, job, brokenError(broken));
      decidedHook();
    }
  } finally {
    deadline.disarm();
    if (prepared) {
      // Broken, stopped or late: it is not used again (released above when it answered).
      deps.prepared!.release(prepared, false);
    } else {
      await retireChild(spawned, ctx.options.killGraceMs);
    }
  }
  // The run's next epoch in the same process, read by its session only now that this exchange
  // stopped reading the channel.
  next.epoch?.();
}

/**
 * Writes the validate request. The facts' first piece rides in it (no `facts.next` round trip
 * for a run whose facts fit one piece); a request too large with it goes without it. Returns the
 * facts still to send: the stream, "sent" (all in the request) or null (none yet). A request
 * that cannot be written cuts the channel (the child would wait for it until the deadline).
 */
async function sendRequest(
  ctx: HostContext,
  job: ValidationJob,
  launch: WorkerLaunch,
  spawned: SupervisedChild,
  ahead: AheadStart | null,
  broken: Broken,
): Promise<FactsStream | "sent" | null> {
  const request = {
    schema: VALIDATE_REQUEST_SCHEMA,
    launch,
    interactionId: job.interactionId,
    submissionId: job.submissionId,
    nodeId: job.nodeId,
    attemptId: job.attemptId,
    submission: job.submission,
    ...(ahead ? { next: { generation: ahead.generation, workerEpoch: ahead.workerEpoch } } : {}),
  };
  let facts: FactsStream | "sent" | null = createFactsStream(runFactsText(ctx.store, job.runId));
  // The revision those facts are at (no commit can come between the two reads).
  if (ahead) ahead.factsRevision = readRunRow(ctx.store, job.runId)?.revision ?? null;
  const first = facts.next();
  if (first.done) facts = "sent";
  await writeFrame(spawned.channel, { ...request, facts: first }).catch((error) => {
    if (!(error instanceof FrameError && error.code === "frameTooLarge")) throw error;
    facts = null;
    // Read again later: what is proposed ahead from them cannot be known to be current.
    if (ahead) ahead.factsRevision = null;
    return writeFrame(spawned.channel, request);
  }).catch((error) => {
    spawned.channel.destroy();
    if (error instanceof FrameError && error.code === "frameTooLarge") broken.tooLarge = true;
    else broken.failure ??= "it stopped before it read the submission";
  });
  return facts;
}

/** The rejection of a submission whose exchange broke: the request stays ready for a retry. */
function brokenError(broken: Broken): { code: string; message: string } {
  if (broken.tooLarge) {
    return {
      code: "outputTooLarge",
      message:
        `Output rejected: with the run's source identity it passes the ${MAX_FRAME_BYTES} byte message limit; send a smaller output`,
    };
  }
  return {
    code: "validationFailed",
    message: `Output not validated: the validation process stopped (${
      broken.failure ?? "it exited without a verdict"
    }); submit it again`,
  };
}

/**
 * Reads the child's messages until its verdict: answers its `facts.next` asks with the run's
 * facts in bounded pieces, fences every message, commits the verdict and replies. True once a
 * verdict committed; otherwise `fail` heard why not.
 */
async function readVerdict(
  ctx: HostContext,
  deps: ValidationDeps,
  job: ValidationJob,
  launch: WorkerLaunch,
  spawned: SupervisedChild,
  prepared: PreparedChild | null,
  /** The facts still to send: the stream, "sent" (all in the request) or null (none yet). */
  factsLeft: FactsStream | "sent" | null,
  /** The epoch the request named for messages proposed ahead, or null. */
  ahead: AheadStart | null,
  on: { fail(why: string): void; decided(): void; launched(start: () => void): void },
): Promise<boolean> {
  let facts = factsLeft;
  try {
    for await (const frame of readerOf(spawned).frames()) {
      if (!frame.ok) {
        on.fail(`it broke the protocol (${frame.error.code})`);
        return false;
      }
      const message = readChildMessage(launch, frame.value);
      if (typeof message === "string") {
        on.fail(message);
        return false;
      }
      if (message.kind === "worker.progress" && message.payload.op === "facts.next") {
        // The run's facts in bounded pieces, read from SQLite as the child asks for them.
        if (facts === "sent") {
          on.fail("it asked for more run facts than there are");
          return false;
        }
        facts ??= createFactsStream(runFactsText(ctx.store, job.runId));
        const factsChunk = facts.next();
        if (factsChunk.done) facts = "sent";
        await writeFrame(
          spawned.channel,
          workerReply({ messageId: message.messageId, outcome: "accepted", factsChunk }),
        );
        continue;
      }
      const answer = judgeVerdict(job, message);
      if (typeof answer === "string") {
        on.fail(answer);
        return false;
      }
      await commitVerdict(ctx, deps, job, answer, spawned, prepared, ahead, on);
      return true;
    }
  } catch {
    // A child killed mid-read resets the pipe: it stopped without a verdict.
    on.fail("its channel closed");
  }
  return false;
}

/**
 * Commits the verdict and replies; an acceptance in the run's prepared process commits with the
 * run's next epoch in that process (accepted-launch.ts).
 */
async function commitVerdict(
  ctx: HostContext,
  deps: ValidationDeps,
  job: ValidationJob,
  answer: Verdict,
  spawned: SupervisedChild,
  prepared: PreparedChild | null,
  ahead: AheadStart | null,
  on: { decided(): void; launched(start: () => void): void },
): Promise<void> {
  crashPoint("host.validation.beforeCommit");
  // Runs after the verdict's COMMIT: whether the messages proposed ahead joined it is known.
  const reply = () =>
    writeFrame(
      spawned.channel,
      workerReply({
        messageId: answer.messageId,
        outcome: "accepted",
        ...(ahead?.committed ? { result: { next: "committed" } } : {}),
      }),
    ).catch(() => {});
  if (prepared && answer.kind === "interaction.accepted" && deps.launchAccepted) {
    // The verdict and the next epoch in one commit (with the epoch's first step when the
    // process proposed it ahead); the reply leaves right after it, before the envelope. The
    // process is no longer this exchange's to release.
    let replied: Promise<void> = Promise.resolve();
    if (ahead && answer.payload.next) ahead.messages = answer.payload.next;
    const start = deps.launchAccepted(job.runId, prepared, () => {
      const accepted = acceptVerdict(ctx, job, answer);
      afterGroupCommit(ctx.store, () => (replied = reply()));
      return accepted;
    }, ahead?.messages.length ? ahead : undefined);
    on.decided();
    if (start) on.launched(start);
    await replied;
    return;
  }
  if (answer.kind === "interaction.rejected") rejectVerdict(ctx, job, answer.payload.error);
  else if (acceptVerdict(ctx, job, answer)) deps.accepted(job.runId);
  on.decided();
  const replied = reply();
  // Idle again before the scheduler (woken by an acceptance) looks for it: the next
  // epoch's envelope is written after this reply on the same channel.
  if (prepared) deps.prepared!.release(prepared, true);
  await replied;
}

/**
 * The epoch an acceptance would launch in the run's prepared process: the next claim generation
 * (an acceptance commits only under the request's own) and an epoch id chosen now.
 */
function aheadHeader(ctx: HostContext, job: ValidationJob): AheadStart {
  return {
    generation: job.generation + 1,
    workerEpoch: ctx.ids.next("wep"),
    factsRevision: null,
    messages: [],
    committed: false,
  };
}

/** The launch header of a validation child: the run, the generation it waits under, an epoch. */
function validationLaunch(job: ValidationJob, workerEpoch: string): WorkerLaunch {
  const base = envelopeBase({ ...job, executionMode: "interactive" }, workerEpoch);
  return { ...base, generation: job.generation };
}

/** A fresh `worker --validate` child with the run's recorded environment, as its workers get. */
function spawnChildFor(
  ctx: HostContext,
  deps: ValidationDeps,
  job: ValidationJob,
  workerEpoch: string,
  outputExceeded: () => void,
): SupervisedChild {
  return spawnChild(ctx, {
    args: ["worker", "--validate"],
    command: deps.command,
    runEnvironment: recordedRunEnvironment(ctx.store, job.runId),
    extraEnv: deps.env(job.runId),
    logStem: workerEpoch,
    onOutputExceeded: outputExceeded,
    register: { registry: deps.registry, kind: "validator", runId: job.runId },
  });
}

/** A message of the child, header and fence first; a string says why it is refused. */
function readChildMessage(launch: WorkerLaunch, value: unknown): WorkerMessage | string {
  const header = parseWorkerHeader(value);
  if (!header.ok) return `it sent an invalid message (${header.error})`;
  if (staleness(header.value, launch) !== null) return "its message names another worker";
  const parsed = parseWorkerPayload(header.value, value);
  if (!parsed.ok) return `it sent an invalid ${header.value.kind} (${parsed.error})`;
  return parsed.value;
}
