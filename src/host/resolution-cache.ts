/**
 * Resolutions kept for starts that repeat one scenario: the test kit's crash runs start the same
 * workflow with the same input in the same few project directories dozens of times
 * (testing/crash-boundaries.ts), and each start would otherwise spawn a source resolver child.
 * A start with the same reference, raw input, project directory and run environment gets the
 * earlier successful answer while every file that answer read still has its recorded hash (and
 * a built-in its revision): re-hashed at each reuse, loading nothing (verifySourceIdentity).
 * A changed, added-to or missing file is a miss, and the run's worker still checks the saved
 * identity and definition digest before it loads anything.
 *
 * Opt-in (`SupervisionExtras.reuseResolutions`), never the host's default: a user's start runs
 * the workflow's `input` parser and `title` callback anew (docs/authoring.md), and those may
 * read the clock or the project; a workflow found by name may be shadowed by a new file. Only
 * references that name a file (absolute, or relative to the project) or a built-in are kept.
 */
import { resolve } from "node:path";
import { canonicalJson } from "../protocol/canonical-json.ts";
import type { WorkflowSource } from "../protocol/worker-launch.ts";
import { verifySourceIdentity } from "../workflows/sources/identity.ts";
import type { ResolveRequest, ResolveResult } from "./host-context.ts";

/** How many distinct starts are kept (the oldest goes first). */
const MAX_ENTRIES = 32;

type Resolve = (request: ResolveRequest) => Promise<ResolveResult>;

/** `resolve` with reuse of its successful answers, as the header says. */
export function reusingResolutions(resolve: Resolve, maxEntries = MAX_ENTRIES): Resolve {
  const kept = new Map<string, Extract<ResolveResult, { ok: true }>>();
  return async (request) => {
    const key = keyOf(request);
    if (key === null) return await resolve(request);
    const hit = kept.get(key);
    if (hit && verifySourceIdentity(hit.workflowSource).ok) {
      // Most recently used last: the eviction below takes the first.
      kept.delete(key);
      kept.set(key, hit);
      return structuredClone(hit);
    }
    kept.delete(key);
    const result = await resolve(request);
    if (result.ok && namesItsSource(request, result.workflowSource)) {
      kept.set(key, structuredClone(result));
      if (kept.size > maxEntries) kept.delete(kept.keys().next().value!);
    }
    return result;
  };
}

/** The start as a canonical string; null when it is not JSON (then it is resolved, not kept). */
function keyOf(request: ResolveRequest): string | null {
  try {
    return canonicalJson({ ...request, env: request.env ?? null });
  } catch {
    return null;
  }
}

/**
 * The reference names the resolved root itself, a path (a name is found by a search that a new
 * file could change, and never resolves to `<cwd>/<name>`) or a built-in id.
 */
function namesItsSource(request: ResolveRequest, source: WorkflowSource): boolean {
  const root = source.root;
  if (root.kind === "builtin") return request.workflow === `builtin:${root.id}`;
  return resolve(request.cwd, request.workflow) === root.path;
}
