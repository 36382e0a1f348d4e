/**
 * The worker's only way to change anything: propose a message to the host and wait for its
 * verdict. Messages leave in order, each with the launch header, a stable message id and the
 * revision the worker expects. A plain proposal goes out only once every earlier message has its
 * verdict and is the only one in flight; pure nodes' starts and closes may be sent ahead, a
 * bounded window of them unacknowledged (AHEAD_WINDOW, node-runner.ts). A `claimLost` verdict
 * means another owner took over: the worker stops at once and writes nothing anywhere.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { parseWorkerReply, type WorkerReply } from "../protocol/worker-reply.ts";
import { encodeFrame, FrameError } from "../protocol/framing.ts";
import type { WorkerChannel } from "./channel.ts";
import { crashPoint } from "../base/crash-point.ts";

export interface LaunchHeader {
  schema: string;
  runId: string;
  generation: number;
  workerEpoch: string;
}

export type HostVerdict = WorkerReply;

/** Thrown when the host says another owner holds the run: stop without writing. */
export class ClaimLostStop extends Error {
  constructor(detail: string) {
    super(`Claim lost: ${detail}`);
    this.name = "ClaimLostStop";
  }
}

/** Thrown when the host refused a proposal (schema, revision, attempt or idempotency check). */
export class ProposalRejected extends Error {
  readonly code: string;
  constructor(kind: string, code: string, message: string) {
    super(`Proposal ${kind} rejected: ${code}: ${message}`);
    this.name = "ProposalRejected";
    this.code = code;
  }
}

/**
 * The host's reply to a proposal of `kind` when it was accepted; `ClaimLostStop` when another
 * owner holds the claim, `ProposalRejected` when the host refused it.
 */
export function acceptedVerdict(kind: string, reply: unknown): HostVerdict {
  const parsed = parseWorkerReply(reply);
  if (!parsed.ok) throw new Error(`Worker channel failed: ${parsed.error}`);
  const verdict = parsed.value;
  if (verdict.outcome === "claimLost") {
    throw new ClaimLostStop(verdict.error?.message ?? `${kind} was refused`);
  }
  if (verdict.outcome !== "accepted") {
    throw new ProposalRejected(
      kind,
      verdict.error?.code ?? "protocolRejected",
      verdict.error?.message ?? "no detail",
    );
  }
  return verdict;
}

export interface Proposer {
  /**
   * Proposes one message once every message sent ahead has its verdict (so nothing external
   * follows an unacknowledged message); resolves with the accepted verdict.
   */
  propose(
    kind: string,
    fields: Record<string, JsonValue | undefined>,
    attemptId?: string,
  ): Promise<HostVerdict>;
  /**
   * Sends a message without waiting for its verdict (a pure node's start or close): later
   * messages go out right behind it, each carrying the revision the earlier ones will produce
   * (every accepted node message increases it by one), so the host commits them together and
   * refuses the rest cleanly once one is refused. Resolves once the message is written; its
   * verdict is awaited through `room` / `settled`, which reject with the first refusal.
   */
  sendAhead(proposal: Proposal): Promise<void>;
  /** Resolves once at most `limit` messages sent ahead wait for verdicts (the window). */
  room(limit: number): Promise<void>;
  /** Resolves once every message sent ahead is acknowledged; rejects with the first refusal. */
  settled(): Promise<void>;
  /** Whether a message would fit one frame (an output too large for it is a node failure). */
  fits(proposal: Proposal): boolean;
  /** The last revision the host reported. */
  readonly revision: number | undefined;
}

export interface Proposal {
  kind: string;
  fields: Record<string, JsonValue | undefined>;
  attemptId?: string;
}

/** The id of an epoch's `sequence`-th message (zero-padded: its receipt keys append in order). */
export function messageIdOf(workerEpoch: string, sequence: number): string {
  return `${workerEpoch}.${String(sequence).padStart(9, "0")}`;
}

/**
 * `sent`: how many messages of this epoch went out already (inside a verdict, proposed ahead:
 * speculative-step.ts), so this proposer's ids follow theirs.
 */
export function createProposer(
  channel: WorkerChannel,
  header: LaunchHeader,
  sent = 0,
): Proposer {
  let sequence = sent;
  let revision: number | undefined;
  let chain: Promise<unknown> = Promise.resolve();

  const nextId = () => messageIdOf(header.workerEpoch, ++sequence);
  const build = (
    { kind, fields, attemptId }: Proposal,
    expectedRevision: number | undefined,
    messageId: string = nextId(),
  ): { messageId: string } => {
    const payload: Record<string, JsonValue> = {};
    for (const [key, value] of Object.entries(fields)) {
      if (value !== undefined) payload[key] = value;
    }
    const message: Record<string, unknown> = {
      ...header,
      kind,
      messageId,
      payload,
    };
    if (attemptId !== undefined) message.attemptId = attemptId;
    if (expectedRevision !== undefined) message.expectedRevision = expectedRevision;
    return message as { messageId: string };
  };

  // `predicted`: the revision was predicted when the message was sent, and later messages already
  // carry the ones after it; an earlier verdict must not move it back.
  const verdictOf = async (
    kind: string,
    pending: Promise<unknown>,
    predicted = false,
  ): Promise<HostVerdict> => {
    const verdict = acceptedVerdict(kind, await pending);
    if (!predicted && typeof verdict.revision === "number") revision = verdict.revision;
    crashPoint(`worker.${kind}.afterReply`);
    return verdict;
  };

  const send = async (proposal: Proposal): Promise<HostVerdict> => {
    const message = build(proposal, revision);
    crashPoint(`worker.${proposal.kind}.beforeSend`);
    const pending = channel.request(message);
    crashPoint(`worker.${proposal.kind}.afterSend`);
    return await verdictOf(proposal.kind, pending);
  };

  // Verdicts of messages sent ahead, in send order (the host answers in that order).
  const ahead: Promise<HostVerdict>[] = [];
  let refusal: { error: unknown } | null = null;

  /** Sends now; the chain moves on at once with the revision this message will produce. */
  const sendNow = (proposal: Proposal): void => {
    const message = build(proposal, revision);
    crashPoint(`worker.${proposal.kind}.beforeSend`);
    const pending = channel.request(message);
    crashPoint(`worker.${proposal.kind}.afterSend`);
    if (revision !== undefined) revision++;
    const verdict = verdictOf(proposal.kind, pending, true);
    // Seen at the next room()/settled(), even before the verdicts ahead of it are awaited.
    verdict.catch((error) => {
      refusal ??= { error };
    });
    ahead.push(verdict);
  };

  const room = async (limit: number): Promise<void> => {
    if (refusal) throw refusal.error;
    while (ahead.length > limit) await ahead.shift();
  };

  const queue = <T>(work: () => Promise<T>): Promise<T> => {
    const result = chain.then(work);
    chain = result.catch(() => {});
    return result;
  };

  return {
    propose(kind, fields, attemptId) {
      return queue(async () => {
        await room(0);
        return await send({ kind, fields, attemptId });
      });
    },
    sendAhead(proposal) {
      const sent = chain.then(() => sendNow(proposal));
      chain = sent.catch(() => {});
      return sent;
    },
    room,
    settled: () => room(0),
    fits(proposal) {
      try {
        encodeFrame(build(proposal, revision, `${header.workerEpoch}.${"9".repeat(9)}`));
        return true;
      } catch (error) {
        if (error instanceof FrameError && error.code === "frameTooLarge") return false;
        throw error;
      }
    },
    get revision() {
      return revision;
    },
  };
}
