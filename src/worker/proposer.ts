/**
 * The worker's only way to change anything: propose a message to the host and wait for its
 * verdict. Proposals are serialized (one in flight), each carries the launch header, a stable
 * message id and the revision the worker last saw. A `claimLost` verdict means another owner
 * took over: the worker stops at once and writes nothing anywhere.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { parseWorkerReply, type WorkerReply } from "../protocol/worker-reply.ts";
import { encodeFrame, FrameError } from "../protocol/framing.ts";
import type { WorkerChannel } from "./channel.ts";
import { crashPoint } from "../protocol/crash-point.ts";

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
  /** Proposes one message; resolves with the accepted verdict. */
  propose(
    kind: string,
    fields: Record<string, JsonValue | undefined>,
    attemptId?: string,
  ): Promise<HostVerdict>;
  /**
   * Sends a message without waiting for its verdict (a pure node's close): the next proposal
   * goes out right behind it, carrying the revision this one will produce (each accepted node
   * message increases it by one), so the host can commit both together (one commit per node
   * boundary) and refuses the next one cleanly when this one was refused. The returned promise
   * resolves once the message is written (so workflow code that runs next cannot hold it back)
   * with its verdict, which the caller awaits before anything external happens.
   */
  proposeAhead(proposal: Proposal): Promise<{ verdict: Promise<HostVerdict> }>;
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

export function createProposer(channel: WorkerChannel, header: LaunchHeader): Proposer {
  let sequence = 0;
  let revision: number | undefined;
  let chain: Promise<unknown> = Promise.resolve();

  // Zero-padded, so the host's receipt keys of one epoch append in key order.
  const nextId = () => `${header.workerEpoch}.${String(++sequence).padStart(9, "0")}`;
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

  const verdictOf = async (kind: string, pending: Promise<unknown>): Promise<HostVerdict> => {
    const verdict = acceptedVerdict(kind, await pending);
    if (typeof verdict.revision === "number") revision = verdict.revision;
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

  /** Sends now; the chain moves on at once with the revision this message will produce. */
  const sendAhead = (proposal: Proposal): Promise<HostVerdict> => {
    const message = build(proposal, revision);
    crashPoint(`worker.${proposal.kind}.beforeSend`);
    const pending = channel.request(message);
    crashPoint(`worker.${proposal.kind}.afterSend`);
    if (revision !== undefined) revision++;
    const verdict = verdictOf(proposal.kind, pending);
    verdict.catch(() => {}); // the caller awaits it; a refusal ends the epoch there
    return verdict;
  };

  const queue = <T>(work: () => Promise<T>): Promise<T> => {
    const result = chain.then(work);
    chain = result.catch(() => {});
    return result;
  };

  return {
    propose(kind, fields, attemptId) {
      return queue(() => send({ kind, fields, attemptId }));
    },
    proposeAhead(proposal) {
      let verdict!: Promise<HostVerdict>;
      const sent = chain.then(() => {
        verdict = sendAhead(proposal);
      });
      chain = sent.catch(() => {});
      return sent.then(() => ({ verdict }));
    },
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
