/**
 * A plain checkpoint's answer meant something else in pi-workflows 0.12: it became the `input` of
 * a continuation run (through the workflow's `input` parser), and `outputs.<checkpoint>` kept the
 * checkpoint's own output (`{summary}`), which a switch from it routed on. Here the answer is the
 * checkpoint's output and `input` stays the run's. The same file (same imports, no version mark)
 * would run differently, so where the answer could be seen after the checkpoint (a later node
 * or a switch reads `input`, the checkpoint's output, or is handed the whole context), the load
 * fails unless the checkpoint says it was written for this version: an `answerSchema` (0.12 had
 * none; `{}` accepts any answer). Read as text, conservatively (a callback that names `input`
 * counts as reading it).
 */
import { DEFINITION_BRAND } from "./types.ts";

interface SpecLike {
  nodes?: Record<string, unknown>;
  edges?: readonly unknown[];
  includes?: Record<string, unknown>;
  presentationPrompt?: unknown;
}

interface EdgeLike {
  from?: string;
  to?: string;
  switch?: { on?: string; cases?: Record<string, string> };
}

/** The refusal for the first plain checkpoint whose answer a file could read the 0.12 way. */
export function findCheckpointAnswerRead(spec: SpecLike): string | null {
  const nodes = spec.nodes ?? {};
  const edges = (spec.edges ?? []) as EdgeLike[];
  for (const [id, node] of Object.entries(nodes)) {
    const n = node as { kind?: unknown; answerSchema?: unknown };
    if (n?.kind !== "checkpoint" || n.answerSchema !== undefined) continue;
    const read = answerRead(id, spec, edges);
    if (read === null) continue;
    return `checkpoint "${id}" has no answerSchema and ${read} after it: in pi-workflows 0.12 a checkpoint's answer became the next run's input and outputs.${id} stayed the checkpoint's own output; here the answer is outputs.${id} and input stays the run's input. Read the answer as outputs.${id}, and give "${id}" an answerSchema (\`answerSchema: {}\` accepts any answer) to run it this way`;
  }
  return null;
}

function answerRead(id: string, spec: SpecLike, edges: EdgeLike[]): string | null {
  for (const edge of edges) {
    const on = edge.from === id ? edge.switch?.on : undefined;
    if (on !== undefined && /^(\$|\$output|\$result\.output)(\.|$)/.test(on)) {
      return `a switch from it reads its output (${on})`;
    }
  }
  for (const next of reachableFrom(id, edges)) {
    const target = spec.nodes?.[next] ?? spec.includes?.[next];
    const where = next in (spec.nodes ?? {}) ? `nodes.${next}` : `includes.${next}`;
    const read = firstRead(target, where, id);
    if (read !== null) return read;
  }
  // Called once the run ends, with `state.input` (0.12: the answer) and `state.outputs`.
  return firstRead(spec.presentationPrompt, "presentationPrompt", id);
}

/**
 * Nodes an edge path from `start` reaches after it was answered (`start` itself only through a
 * loop): from `start`, a switch on its outcome is followed only for `ok` (a timed-out or failed
 * checkpoint has no answer, and 0.12 had neither) and one on its error not at all.
 */
function reachableFrom(start: string, edges: EdgeLike[]): string[] {
  const seen = new Set<string>();
  const queue = [start];
  while (queue.length > 0) {
    const from = queue.shift() as string;
    for (const edge of edges) {
      if (edge.from !== from) continue;
      const on = edge.switch?.on ?? "";
      let cases = Object.values(edge.switch?.cases ?? {});
      if (from === start && on === "$result.outcome") {
        cases = edge.switch?.cases?.ok === undefined ? [] : [edge.switch.cases.ok];
      } else if (from === start && on.startsWith("$result.error")) {
        cases = [];
      }
      for (const to of [edge.to, ...cases]) {
        if (typeof to === "string" && !seen.has(to)) {
          seen.add(to);
          queue.push(to);
        }
      }
    }
  }
  return [...seen];
}

function firstRead(value: unknown, path: string, id: string): string | null {
  const seen = new Set<object>();
  const walk = (v: unknown, at: string, depth: number): string | null => {
    if (typeof v === "function") {
      const read = readsAnswer(Function.prototype.toString.call(v), id);
      return read === null ? null : `${at} ${read}`;
    }
    if (
      typeof v !== "object" || v === null || depth > 3 || seen.has(v) ||
      (v as Record<symbol, unknown>)[DEFINITION_BRAND] === true
    ) {
      return null;
    }
    seen.add(v);
    for (const [key, child] of Object.entries(v)) {
      const found = walk(child, `${at}.${key}`, depth + 1);
      if (found !== null) return found;
    }
    return null;
  };
  return walk(value, path, 0);
}

const WORD = (name: string) => new RegExp(String.raw`(?<![\w$])${name}(?![\w$])`);

/** How a callback's text may read what 0.12 gave differently after the checkpoint, or null. */
function readsAnswer(source: string, id: string): string | null {
  if (WORD("input").test(source)) return "reads input";
  const escaped = id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  // `outputs.<id>`, or `results.<id>.output` (its outcome, error and times are the same in 0.12).
  const record = new RegExp(
    String
      .raw`(?<![\w$])results\s*(?:\??\.\s*${escaped}(?![\w$])|\??\.?\s*\[\s*["'\x60]${escaped}["'\x60]\s*\])`,
    "g",
  );
  const elsewhere = WORD(escaped).test(source.replace(record, ""));
  if (
    (elsewhere && WORD("outputs").test(source)) ||
    (new RegExp(record.source).test(source) && WORD("output").test(source))
  ) {
    return `reads outputs.${id}`;
  }
  if (
    /(?<![\w$])(?:outputs|results)\s*\[(?!\s*["'`])|\(\s*(?:outputs|results)\s*[,)]/.test(source)
  ) {
    return "reads outputs by a computed key";
  }
  const head =
    /^\s*(?:async\s+)?(?:function\s*\*?\s*[\w$]*\s*|[\w$]+\s*)?\(\s*([A-Za-z_$][\w$]*)\s*[,)=]/
      .exec(source) ?? /^\s*(?:async\s+)?([A-Za-z_$][\w$]*)\s*=>/.exec(source);
  const param = head?.[1];
  if (
    head !== null && param !== undefined &&
    new RegExp(String.raw`(?<![\w$.])${param.replace(/\$/g, "\\$")}(?![\w$])(?!\s*\??\.)`)
      .test(source.slice(head.index + head[0].length))
  ) {
    return `hands its whole context (${param}) on`;
  }
  return null;
}
