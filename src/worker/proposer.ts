/**
 * The worker's only way to change anything: propose a message to the host and wait for its
 * verdict. Proposals are serialized (one in flight), each carries the launch header, a stable
 * message id and the revision the worker last saw. A `claimLost` verdict means another owner
 * took over: the worker stops at once and writes nothing anywhere.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { parseWorkerReply, type WorkerReply } from "../protocol/worker-reply.ts";
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
  /** The last revision the host reported. */
  readonly revision: number | undefined;
}

export function createProposer(channel: WorkerChannel, header: LaunchHeader): Proposer {
  let sequence = 0;
  let revision: number | undefined;
  let chain: Promise<unknown> = Promise.resolve();

  const send = async (
    kind: string,
    fields: Record<string, JsonValue | undefined>,
    attemptId: string | undefined,
  ): Promise<HostVerdict> => {
    const payload: Record<string, JsonValue> = {};
    for (const [key, value] of Object.entries(fields)) {
      if (value !== undefined) payload[key] = value;
    }
    const message: Record<string, unknown> = {
      ...header,
      kind,
      messageId: `${header.workerEpoch}.${++sequence}`,
      payload,
    };
    if (attemptId !== undefined) message.attemptId = attemptId;
    if (revision !== undefined) message.expectedRevision = revision;
    crashPoint(`worker.${kind}.beforeSend`);
    const pending = channel.request(message as { messageId: string });
    crashPoint(`worker.${kind}.afterSend`);
    const verdict = acceptedVerdict(kind, await pending);
    if (typeof verdict.revision === "number") revision = verdict.revision;
    crashPoint(`worker.${kind}.afterReply`);
    return verdict;
  };

  return {
    propose(kind, fields, attemptId) {
      const result = chain.then(() => send(kind, fields, attemptId));
      chain = result.catch(() => {});
      return result;
    },
    get revision() {
      return revision;
    },
  };
}
