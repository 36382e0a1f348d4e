/**
 * The function-free description of a node that goes into the definition digest: changing a
 * node's kind, fixed timeout, label or choices changes the digest; editing a callback body does
 * not (the source file hash covers that).
 */
import type { SnapshotNode } from "../protocol/definition-snapshot.ts";
import type { WorkflowNode } from "./types.ts";
import { updateStreams } from "./shell-line-form.ts";

export function snapshotNode(node: WorkflowNode): SnapshotNode {
  const out: SnapshotNode = { kind: node.kind };
  const t = node.timeoutMs;
  out.timeoutMs = typeof t === "function" ? "callback" : t === undefined ? "default" : t;
  if (node.statusDetail !== undefined) out.statusDetail = node.statusDetail;
  switch (node.kind) {
    case "agent":
      if (node.expectedOutput !== undefined) out.expectedOutput = node.expectedOutput;
      out.validate = node.validate !== undefined;
      if (node.tools !== undefined) out.tools = [...node.tools];
      break;
    case "agentGroup":
      out.maxConcurrency = node.maxConcurrency ?? null;
      out.tools = node.tools ? [...node.tools] : null;
      out.minSucceeded = node.minSucceeded ?? null;
      break;
    case "decision":
      out.choices = [...node.choices];
      out.field = node.field;
      break;
    case "notify":
      out.notifyKind = node.notifyKind;
      break;
    case "action":
      out.effect = effectSnapshot(node.kind, node.effect);
      break;
    case "shell":
      out.effect = effectSnapshot(node.kind, node.effect);
      out.parse = node.parse !== undefined;
      out.updates = node.updates ? { streams: updateStreams(node.updates) } : null;
      break;
    case "humanDecision":
      out.audience = typeof node.audience === "function" ? "callback" : node.audience;
      out.choices = JSON.parse(JSON.stringify(node.choices));
      out.onTimeout = typeof node.onTimeout === "function" ? "callback" : node.onTimeout ?? null;
      break;
    default:
      break;
  }
  return out;
}

function effectSnapshot(
  kind: string,
  effect: { type?: string; observe?: unknown } | undefined,
): Record<string, unknown> | null {
  if (!effect) return null;
  return { type: effect.type ?? kind, contract: effect.observe ? "readBack" : "idempotencyKey" };
}
