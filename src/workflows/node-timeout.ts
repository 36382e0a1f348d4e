/** Resolves a node's wall-clock limit before its attempt starts. */
import type { RunFacts } from "../protocol/run-facts.ts";
import type { CompiledWorkflow } from "./compile.ts";
import { errorMessage, NodeFailure } from "./errors.ts";
import { scopeContext, viewFacts } from "./facts-view.ts";
import { nodeRunState } from "./node-run-state.ts";

export const DEFAULT_NODE_TIMEOUT_MS = 15 * 60_000;
/** A timeout callback must answer within this bound. */
export const TIMEOUT_CALLBACK_BOUND_MS = 30_000;
/** Upper bound for any node timeout (30 days): keeps deadlines representable and sane. */
const MAX_TIMEOUT_MS = 30 * 24 * 3600_000;

/**
 * Kinds that wait for a person: the default bounds work, not waiting, so without an author
 * `timeoutMs` they have no deadline at all (the worker still bounds building the request).
 */
const WAITS_FOR_A_PERSON = new Set(["checkpoint", "humanDecision"]);

/**
 * `timeoutMs` as a number, `null` (no limit) or a callback; default 15 minutes (none for a
 * checkpoint or human decision, whose deadline applies while it waits). Throws a
 * `NodeFailure` (`timeoutCallbackFailed`) when the callback throws, hangs or returns nonsense:
 * the worker then records the attempt as failed with that error.
 */
export async function resolveNodeTimeout(
  wf: CompiledWorkflow,
  nodeId: string,
  ctx: { facts: RunFacts; attemptId?: string },
): Promise<number | null> {
  const node = wf.nodes.get(nodeId);
  if (!node) throw new NodeFailure("unknownNode", `Unknown node "${nodeId}"`);
  const spec = node.node.timeoutMs;
  if (spec === undefined) return WAITS_FOR_A_PERSON.has(node.kind) ? null : DEFAULT_NODE_TIMEOUT_MS;
  if (typeof spec !== "function") return spec;
  const view = viewFacts(wf, ctx.facts);
  let timer: ReturnType<typeof setTimeout> | undefined;
  // Aborted when the bound runs out, so a callback that waits on I/O can stop (0.12 gave one).
  const bound = new AbortController();
  try {
    const base = scopeContext(wf, view, ctx.facts, node.scope);
    const state = nodeRunState(wf, view, ctx.facts, base, nodeId, ctx.attemptId ?? "");
    const value = await Promise.race([
      Promise.resolve().then(() => spec({ ...base, state, signal: bound.signal })),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          const error = new Error(`no answer within ${TIMEOUT_CALLBACK_BOUND_MS} ms`);
          bound.abort(error);
          reject(error);
        }, TIMEOUT_CALLBACK_BOUND_MS);
      }),
    ]);
    if (value === null) return null;
    if (
      typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > MAX_TIMEOUT_MS
    ) {
      throw new Error(
        "it must return a non-negative integer of milliseconds (at most 30 days) or null",
      );
    }
    return value;
  } catch (error) {
    throw new NodeFailure(
      "timeoutCallbackFailed",
      `Timeout callback of node "${nodeId}" failed: ${errorMessage(error)}`,
    );
  } finally {
    clearTimeout(timer);
  }
}
