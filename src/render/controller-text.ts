/**
 * Plain-text views of controllers and their resources for people, shared by the CLI's
 * `controller` command and the Pi extension's `/controller`. Pure: the caller passes the clock.
 */
import { canonicalJson, type JsonValue } from "../protocol/canonical-json.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";

type GetReceipt = OperationReceipt<"controller.get">;
type ListReceipt = OperationReceipt<"controller.list">;
type Summary = GetReceipt["controller"];
type Resource = GetReceipt["resource"];
type Queue = GetReceipt["queue"];

const MAX_VALUE_CHARS = 2000;

function value(v: JsonValue | undefined): string {
  const text = canonicalJson(v ?? null);
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}…` : text;
}

/** `settled`, `pending`, `reconciling`, `failing (n errors)`, `deleting`... as of `now`. */
export function resourcePhase(
  resource: { generation: number; observedGeneration: number; deleting: boolean },
  queue: Queue,
  now: number,
): string {
  const parts: string[] = [];
  if (resource.deleting) parts.push("deleting");
  if (queue?.reconciling) parts.push("reconciling");
  else if (queue?.consecutiveErrors) {
    parts.push(
      `failing (${queue.consecutiveErrors} error${queue.consecutiveErrors > 1 ? "s" : ""})`,
    );
  } else if (queue?.pending && queue.availableAt <= now) parts.push("pending");
  else if (resource.observedGeneration < resource.generation) parts.push("not reconciled");
  else if (queue?.pending) {
    parts.push(`settled, next reconcile ${new Date(queue.availableAt).toISOString()}`);
  } else parts.push("settled");
  return parts.join(", ");
}

function metaOf(resource: Resource) {
  return {
    generation: resource.metadata.generation,
    observedGeneration: resource.status.observedGeneration,
    deleting: resource.metadata.deletionTimestamp !== undefined,
  };
}

/** `sync/a (version 3, generation 2)`. */
export function formatResourceName(resource: Resource): string {
  const m = resource.metadata;
  return `${m.controller}/${m.key} (version ${m.resourceVersion}, generation ${m.generation})`;
}

export function formatResourceHeadline(resource: Resource, queue: Queue, now: number): string {
  return `${formatResourceName(resource)}, observed ${resource.status.observedGeneration}: ${
    resourcePhase(metaOf(resource), queue, now)
  }`;
}

/**
 * A resource with its conditions, child workflows, effects and events. `runId` prints a child
 * run's id as the front end shows run ids (the CLI: `run-1a2b3c4d`; default: whole).
 */
export function formatResourceDetail(
  detail: GetReceipt,
  now: number,
  runId: (id: string) => string = (id) => id,
): string {
  const { resource, queue } = detail;
  const lines = [formatResourceHeadline(resource, queue, now), `uid: ${resource.metadata.uid}`];
  if (detail.controller.blockedReason) {
    lines.push(
      `controller blocked: ${detail.controller.blockedReason}${
        detail.controller.blockedDetail ? ` (${detail.controller.blockedDetail})` : ""
      }; once the source is right, reconcile the resource (or apply one again)`,
    );
  }
  const binding = bindingText(detail.controller);
  if (binding) lines.push(binding);
  lines.push(`spec: ${value(resource.spec)}`);
  lines.push(`status: ${value(resource.status.controllerStatus)}`);
  for (const c of resource.status.conditions) {
    const status = c.status === "unknown" ? "Unknown" : c.status ? "True" : "False";
    lines.push(`  ${c.type}=${status} ${c.reason}${c.message ? `: ${c.message}` : ""}`);
  }
  if (resource.metadata.finalizers.length > 0) {
    lines.push(`finalizers: ${resource.metadata.finalizers.join(", ")}`);
  }
  if (resource.metadata.deletionTimestamp) {
    lines.push(`deletion requested: ${resource.metadata.deletionTimestamp}`);
  }
  if (queue?.pending && !queue.reconciling) {
    lines.push(`next reconcile: ${new Date(queue.availableAt).toISOString()}`);
  }
  if (queue?.lastError) {
    lines.push(`last error: ${queue.lastError.code}: ${queue.lastError.message}`);
  }
  for (const w of detail.workflows) {
    lines.push(
      `workflow ${w.requestKey}: ${w.state} (attempt ${w.attempt}${
        w.runId ? `, run ${runId(w.runId)}` : ""
      }${w.blockedReason ? `, ${w.blockedReason}` : ""})${
        w.error ? ` ${w.error.code}: ${w.error.message}` : ""
      }${w.blockedDetail ? `: ${w.blockedDetail}` : ""}`,
    );
  }
  for (const e of detail.effects) lines.push(`effect ${e.kind} ${e.effectId}: ${e.state}`);
  if (detail.events.length > 0) {
    lines.push("events:");
    for (const e of detail.events) {
      lines.push(`  ${new Date(e.at).toISOString()} ${e.type} (v${e.resourceVersion})`);
    }
  }
  return lines.join("\n");
}

export function formatControllerList(receipt: ListReceipt, now: number): string {
  if (receipt.controllers.length === 0) return "No controllers in this project";
  const lines: string[] = [];
  for (const c of receipt.controllers) {
    lines.push(
      `${c.name}  ${c.sourceDigest.slice(0, 19)}…  ${c.resources} resource${
        c.resources === 1 ? "" : "s"
      }${c.blockedReason ? `  blocked: ${c.blockedReason}` : ""}`,
    );
    const binding = bindingText(c);
    if (binding) lines.push(`  ${binding}`);
  }
  for (const r of receipt.resources) {
    lines.push(
      `  ${r.controller}/${r.key}  version ${r.resourceVersion}, generation ${r.generation}  ${
        resourcePhase(r, r.queue, now)
      }`,
    );
  }
  return lines.join("\n");
}

/** The controller's approved session binding, by id and time (never the session). */
function bindingText(c: Summary): string | null {
  const b = c.sessionBinding;
  return b
    ? `session binding ${b.bindingId}: approved ${
      new Date(b.approvedAt).toISOString()
    } (interactive child runs use that Pi session)`
    : null;
}

export function formatBound(receipt: OperationReceipt<"controller.bind">): string {
  if (receipt.unchanged) {
    return `This session is already approved for ${receipt.controller}'s interactive child runs (${receipt.bindingId})`;
  }
  return `Approved this session for ${receipt.controller}'s interactive child runs (${receipt.bindingId}${
    receipt.replaced ? "; the session approved before is revoked" : ""
  }); revoke with /controller unbind ${receipt.controller}`;
}

export function formatUnbound(receipt: OperationReceipt<"controller.unbind">): string {
  const n = receipt.activeChildRuns;
  return `Revoked session binding ${receipt.bindingId} of ${receipt.controller}${
    n > 0
      ? `; ${n} child run${n === 1 ? "" : "s"} already started there go${
        n === 1 ? "es" : ""
      } on (cancel with pi-workflows cancel <runId>)`
      : ""
  }`;
}

/** A reconcile due later than this counts as the resource having settled for now. */
const QUIET_MS = 1_000;

/**
 * Where a resource stands for someone waiting on it: `blocked` (its controller), `failing` (the
 * last reconcile failed), `settled` (its generation reconciled, nothing due within a second, no
 * child workflow still running: a requeueAfter later is fine), or `busy`.
 */
export function resourceProgress(
  detail: GetReceipt,
  now: number,
): "blocked" | "failing" | "settled" | "busy" {
  const { resource, queue } = detail;
  if (detail.controller.blockedReason) return "blocked";
  if (!queue || queue.reconciling) return "busy";
  if (queue.consecutiveErrors > 0) return "failing";
  const dueSoon = queue.pending && queue.availableAt - now < QUIET_MS;
  const childRunning = detail.workflows.some((w) => w.state === "pending" || w.state === "running");
  return !dueSoon && !childRunning &&
      resource.status.observedGeneration >= resource.metadata.generation
    ? "settled"
    : "busy";
}
