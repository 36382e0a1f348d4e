/**
 * One validation exchange in a child (validation.ts starts it, or borrows the run's prepared
 * process): the validate request with the facts' first piece, the child's `facts.next` asks
 * answered, each message fenced by the request's launch header before its payload is read, and
 * ONE verdict committed and replied to. An acceptance in a prepared process commits with the
 * run's next epoch there (accepted-launch.ts).
 */
import { corkForTurn, FrameError, MAX_FRAME_BYTES, writeFrame } from "../../protocol/framing.ts";
import { VALIDATE_REQUEST_SCHEMA } from "../../protocol/validate-messages.ts";
import type { WorkerLaunch } from "../../protocol/worker-launch.ts";
import {
  parseWorkerHeader,
  parseWorkerPayload,
  type WorkerMessage,
  workerReply,
} from "../../protocol/worker-messages.ts";
import {
  acceptVerdict,
  judgeVerdict,
  rejectVerdict,
  type Verdict,
  type VerdictJob,
} from "../worker-messages/interaction-verdicts.ts";
import { aheadOfHeld } from "../held-submission.ts";
import type { HostContext } from "../host-context.ts";
import type { ProcessRegistry } from "./process-registry.ts";
import { type ChildCommand, readerOf, type SupervisedChild } from "./children/spawn-child.ts";
import { staleness } from "./children/epoch-fence.ts";
import type { PreparedChild, PreparedChildren } from "./prepared-children.ts";
import { crashPoint } from "../../base/crash-point.ts";
import { afterGroupCommit } from "../../state/transactions.ts";
import { runFactsText } from "../../state/run-facts-text.ts";
import { createFactsStream, type FactsStream } from "../worker-messages/facts-stream.ts";
import { readRunRow } from "../../state/protected-write.ts";
import type { AheadStart } from "../worker-messages/speculative-start.ts";

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

/** Why an exchange ended without a verdict. */
export interface Broken {
  failure: string | null;
  tooLarge: boolean;
}

/** One exchange: the submission's job, the child it runs in and the header its request names. */
export interface Exchange {
  ctx: HostContext;
  deps: ValidationDeps;
  job: VerdictJob;
  launch: WorkerLaunch;
  spawned: SupervisedChild;
  /** The run's prepared process it runs in, or null (a fresh child). */
  prepared: PreparedChild | null;
  /** The epoch the request names for messages proposed ahead, or null. */
  ahead: AheadStart | null;
  broken: Broken;
}

/**
 * Writes the validate request. The facts' first piece rides in it (no `facts.next` round trip
 * for a run whose facts fit one piece); a request too large with it goes without it. Returns the
 * facts still to send: the stream, "sent" (all in the request) or null (none yet). A request
 * that cannot be written cuts the channel (the child would wait for it until the deadline).
 */
export async function sendRequest(x: Exchange): Promise<FactsStream | "sent" | null> {
  const { ctx, job, ahead, spawned } = x;
  const request = {
    schema: VALIDATE_REQUEST_SCHEMA,
    launch: x.launch,
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
  // Named before the write can wait: the hold may end meanwhile (held-submission.ts).
  if (ahead && job.held) aheadOfHeld(job.held, ahead, first.done === true);
  await writeFrame(spawned.channel, { ...request, facts: first }).catch((error) => {
    if (!(error instanceof FrameError && error.code === "frameTooLarge")) throw error;
    facts = null;
    // Read again later: what is proposed ahead from them cannot be known to be current.
    if (ahead) ahead.factsRevision = null;
    return writeFrame(spawned.channel, request);
  }).catch((error) => {
    spawned.channel.destroy();
    if (error instanceof FrameError && error.code === "frameTooLarge") x.broken.tooLarge = true;
    else x.broken.failure ??= "it stopped before it read the submission";
  });
  return facts;
}

/** The rejection of a submission whose exchange broke: the request stays ready for a retry. */
export function brokenError(broken: Broken): { code: string; message: string } {
  if (broken.tooLarge) {
    return {
      code: "outputTooLarge",
      message: "Output rejected: with the run's source identity it passes the " +
        `${MAX_FRAME_BYTES} byte message limit; send a smaller output`,
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
 * verdict committed; otherwise `x.broken.failure` says why not (the first reason kept).
 */
export async function readVerdict(
  x: Exchange,
  /** The facts still to send: the stream, "sent" (all in the request) or null (none yet). */
  factsLeft: FactsStream | "sent" | null,
  on: { decided(): void; launched(start: () => void): void },
): Promise<boolean> {
  const { ctx, job, spawned } = x;
  const fail = (why: string) => (x.broken.failure ??= why);
  let facts = factsLeft;
  try {
    for await (const frame of readerOf(spawned).frames()) {
      if (!frame.ok) {
        fail(`it broke the protocol (${frame.error.code})`);
        return false;
      }
      const message = readChildMessage(x.launch, frame.value);
      if (typeof message === "string") {
        fail(message);
        return false;
      }
      if (message.kind === "worker.progress" && message.payload.op === "facts.next") {
        // The run's facts in bounded pieces, read from SQLite as the child asks for them.
        if (facts === "sent") {
          fail("it asked for more run facts than there are");
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
        fail(answer);
        return false;
      }
      await commitVerdict(x, answer, on);
      return true;
    }
  } catch {
    // A child killed mid-read resets the pipe: it stopped without a verdict.
    fail("its channel closed");
  }
  return false;
}

/**
 * Commits the verdict and replies; an acceptance in the run's prepared process commits with the
 * run's next epoch in that process (accepted-launch.ts).
 */
async function commitVerdict(
  x: Exchange,
  answer: Verdict,
  on: { decided(): void; launched(start: () => void): void },
): Promise<void> {
  const { ctx, deps, job, prepared, ahead } = x;
  crashPoint("host.validation.beforeCommit");
  // Runs after the verdict's COMMIT: whether the messages proposed ahead joined it is known.
  const reply = () =>
    writeFrame(
      x.spawned.channel,
      workerReply({
        messageId: answer.messageId,
        outcome: "accepted",
        ...(ahead?.committed ? { result: { next: "committed" } } : {}),
      }),
    ).catch(() => {});
  if (prepared && answer.kind === "interaction.accepted" && deps.launchAccepted) {
    // The verdict and the next epoch in one commit (with the epoch's first step when the
    // process proposed it ahead); the reply, then the envelope, leave in one write after the
    // turn (a submit waiting on it answers first). The process is no longer the exchange's.
    let replied: Promise<void> = Promise.resolve();
    if (ahead && answer.payload.next) ahead.messages = answer.payload.next;
    const start = deps.launchAccepted(job.runId, prepared, () => {
      const accepted = acceptVerdict(ctx, job, answer);
      corkForTurn(x.spawned.channel);
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
  // Idle again before the scheduler (woken by an acceptance) looks: its envelope follows this.
  if (prepared) deps.prepared!.release(prepared, true);
  await replied;
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
