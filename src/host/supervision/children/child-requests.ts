/**
 * The child kit's request and reply: requests a kind writes to its child's channel, each answered
 * by one frame within its deadline. A source resolver asks one question and hears its progress
 * before the answer (resolver.ts); the controller resolver asks a series, answered by request id
 * (controllers/resolver-pool.ts). The kind's `read` is its codec: what a frame is (an answer, a
 * progress report, or a broken protocol). A request not answered in time cuts the channel (the
 * kit's bound, child-deadline.ts): a child that hangs on one question is not asked another. When
 * the reading ends (the child stopped, was cut or broke the protocol) every open request hears
 * `ended`.
 */
import { armChildDeadline } from "./child-deadline.ts";
import { readerOf, type SupervisedChild } from "./spawn-child.ts";

/** What one frame of the child is; null breaks the channel (the reading ends). */
export type Heard<A, P> =
  /** The answer to `requestId`'s request; with no id, to the oldest one open. */
  | { answer: A; requestId?: string }
  /** Progress of the oldest request open (a child that reports progress serves one at a time). */
  | { progress: P }
  | null;

export type Asked<A> = { ok: true; answer: A } | { ok: false; why: "timedOut" | "ended" };

export interface ChildRequests<A, P> {
  /**
   * Opens `requestId`'s request (the caller writes it to the channel): resolves with its answer,
   * or `timedOut` after `ms` (the channel is cut then), or `ended`.
   */
  expect(requestId: string, ms: number, onProgress?: (progress: P) => void): Promise<Asked<A>>;
  /** Requests open now. */
  open(): number;
  /** Resolves once the reading ended and every open request heard `ended`. */
  ended: Promise<void>;
}

interface Open<A, P> {
  settle(asked: Asked<A>): void;
  onProgress?: (progress: P) => void;
}

/** Reads the child's channel from now on; `onEnd` runs as the reading ends, before any `ended`. */
export function serveChildRequests<A, P>(
  spawned: SupervisedChild,
  read: (value: unknown) => Heard<A, P>,
  onEnd: () => void = () => {},
): ChildRequests<A, P> {
  const open = new Map<string, Open<A, P>>();
  const oldest = () => open.values().next().value;
  const reading = async () => {
    try {
      for await (const frame of readerOf(spawned).frames()) {
        const heard = frame.ok ? read(frame.value) : null;
        if (heard === null) break;
        if ("progress" in heard) oldest()?.onProgress?.(heard.progress);
        else {
          const id = heard.requestId ?? open.keys().next().value;
          if (id !== undefined) open.get(id)?.settle({ ok: true, answer: heard.answer });
        }
      }
    } catch {
      // The channel failed: the child is gone either way.
    }
    onEnd();
    for (const request of [...open.values()]) request.settle({ ok: false, why: "ended" });
  };
  return {
    expect(requestId, ms, onProgress) {
      return new Promise<Asked<A>>((resolve) => {
        const deadline = armChildDeadline(spawned, ms, () => {
          request.settle({ ok: false, why: "timedOut" });
        });
        const request: Open<A, P> = {
          settle(asked) {
            if (open.get(requestId) !== request) return;
            open.delete(requestId);
            deadline.disarm();
            resolve(asked);
          },
          onProgress,
        };
        open.set(requestId, request);
      });
    },
    open: () => open.size,
    ended: reading(),
  };
}
