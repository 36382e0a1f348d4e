/** `defineWorkflow`: checks the shape eagerly and brands the definition. */
import { isAbsolute } from "node:path";
import { pathToFileURL } from "node:url";
import * as v from "valibot";
import { firstIssue, WorkflowSpecSchema } from "./definition-schema.ts";
import { WorkflowDefinitionError } from "./errors.ts";
import { ERROR_STRING_COMPARISON, findErrorStringComparison } from "./error-compare-012.ts";
import { DEFINITION_BRAND, type WorkflowDefinition, type WorkflowSpec } from "./types.ts";

export function defineWorkflow<I = unknown>(spec: WorkflowSpec<I>): WorkflowDefinition<I> {
  return define(spec, true, callerModule(defineWorkflow));
}

/** Where a definition was made, recorded by `defineWorkflow` (not part of the workflow's shape). */
const DEFINED_IN = Symbol.for("pi-workflows.definedIn");

/**
 * The URL of the module that called `defineWorkflow` to make `def`, when the runtime said: the
 * test kit uses it to run a definition object from its file, as a run's worker loads it.
 */
export function definedIn(def: WorkflowDefinition): string | undefined {
  return (def as unknown as Record<symbol, string | undefined>)[DEFINED_IN];
}

/** The file of the function that called `fn`, from V8's (and Deno's) structured stack. */
function callerModule(fn: (...args: never[]) => unknown): string | undefined {
  const original = Error.prepareStackTrace;
  try {
    Error.prepareStackTrace = (_error, sites) => sites;
    const holder: { stack?: unknown } = {};
    Error.captureStackTrace(holder, fn);
    const sites = holder.stack as { getFileName(): string | null | undefined }[] | undefined;
    const file = Array.isArray(sites) ? sites[0]?.getFileName() : undefined;
    if (typeof file !== "string") return undefined;
    // ESM modules report a file URL; runners that evaluate modules themselves (vitest), a path.
    if (file.startsWith("file:")) return file;
    return isAbsolute(file) ? pathToFileURL(file).href : undefined;
  } catch {
    return undefined;
  } finally {
    Error.prepareStackTrace = original;
  }
}

/**
 * `defineWorkflow` without the schema check, for a run's worker only: it loads bytes whose hashes
 * match the saved source identity, which the source resolver already loaded and checked in full
 * (the check is most of a large definition's load time: ~28 ms at 1,000 nodes), and it compares
 * the compiled definition's digest with the saved one before any node runs.
 */
export function defineCheckedWorkflow<I = unknown>(spec: WorkflowSpec<I>): WorkflowDefinition<I> {
  return define(spec, false);
}

function define<I>(
  spec: WorkflowSpec<I>,
  checkShape: boolean,
  module?: string,
): WorkflowDefinition<I> {
  const label = typeof (spec as { name?: unknown })?.name === "string"
    ? ` "${(spec as { name: string }).name}"`
    : "";
  if (typeof spec !== "object" || spec === null) {
    throw new WorkflowDefinitionError(
      "invalidDefinition",
      "Invalid workflow definition: expected an object passed to defineWorkflow",
    );
  }
  const parsed = checkShape ? v.safeParse(WorkflowSpecSchema, spec) : null;
  if (parsed !== null && !parsed.success) {
    throw new WorkflowDefinitionError(
      "invalidDefinition",
      `Invalid workflow definition${label}: ${firstIssue(parsed.issues)}`,
    );
  }
  const compared = checkShape ? findErrorStringComparison(spec) : null;
  if (compared !== null) {
    throw new WorkflowDefinitionError(
      "invalidDefinition",
      `Invalid workflow definition${label}: ${compared} ${ERROR_STRING_COMPARISON}`,
    );
  }
  const clash = Object.keys(spec.includes ?? {}).find((m) => m in spec.nodes);
  if (clash) {
    throw new WorkflowDefinitionError(
      "invalidDefinition",
      `Invalid workflow definition${label}: include mount "${clash}" has the same name as a node`,
    );
  }
  const def = { ...spec, [DEFINITION_BRAND]: true as const };
  if (module !== undefined) {
    Object.defineProperty(def, DEFINED_IN, { value: module, enumerable: false });
  }
  return Object.freeze(def) as WorkflowDefinition<I>;
}

export function isWorkflowDefinition(value: unknown): value is WorkflowDefinition {
  return typeof value === "object" && value !== null &&
    (value as Record<symbol, unknown>)[DEFINITION_BRAND] === true;
}

/**
 * A frozen registry of definitions; two definitions with the same workflow name are an error.
 * Given an array it is keyed by workflow name; given an object (`{autoplan: def, ...}`) the keys
 * are kept.
 */
export function defineWorkflowRegistry<
  const R extends Record<string, WorkflowDefinition> | readonly WorkflowDefinition[],
>(
  defs: R,
): R extends readonly WorkflowDefinition[] ? Readonly<Record<string, WorkflowDefinition>>
  : Readonly<R> {
  const entries: [string, unknown][] = Array.isArray(defs)
    ? defs.map((def) => [(def as { name?: string })?.name ?? "", def])
    : Object.entries(defs ?? {});
  const out: Record<string, WorkflowDefinition> = {};
  const names = new Set<string>();
  for (const [key, def] of entries) {
    if (!isWorkflowDefinition(def)) {
      throw new WorkflowDefinitionError(
        "invalidDefinition",
        `Invalid workflow registry: entry ${key || "?"} is not from defineWorkflow`,
      );
    }
    if (names.has(def.name)) {
      throw new WorkflowDefinitionError(
        "invalidDefinition",
        `Invalid workflow registry: duplicate workflow name "${def.name}"`,
      );
    }
    names.add(def.name);
    out[key] = def;
  }
  return Object.freeze(out) as never;
}
