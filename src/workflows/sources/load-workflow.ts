/**
 * `loadWorkflow`: the one entry the worker and the source-resolver child call. It resolves a
 * reference, imports the file (and every string-referenced include) in a fresh load session,
 * compiles the flattened graph and returns it with the source identity the launch envelope
 * carries. Every failure is a `WorkflowLoadError` with a code and, where known, `path:line`.
 */
import { existsSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { fastFingerprint } from "../../protocol/fast-canonical-json.ts";
import type { ResolveStep } from "../../protocol/resolve-progress.ts";
import type { MountedSource, WorkflowSource } from "../../protocol/worker-launch.ts";
import { type CompiledScope, type CompiledWorkflow, compileWorkflow } from "../compile.ts";
import { isWorkflowDefinition } from "../define-workflow.ts";
import { errorMessage, WorkflowDefinitionError, WorkflowLoadError } from "../errors.ts";
import type { WorkflowDefinition } from "../types.ts";
import { builtinOfDefinition, type BuiltinWorkflow, findBuiltin } from "./builtin-catalog.ts";
import { resolveWorkflowRef, type SourceDirs, type WorkflowRef } from "./discovery.ts";
import { hashFile } from "./identity.ts";
import { importModule } from "./import-module.ts";
import { missingExportHint } from "./compat-0-12.ts";
import {
  closeLoadSession,
  installWorkflowHooks,
  type LoadSession,
  openLoadSession,
  sessionUrl,
} from "./module-hooks.ts";

export interface WorkflowIdentity {
  workflowSource: WorkflowSource;
  /** `fingerprint()` of the flattened graph snapshot (no functions). */
  definitionDigest: string;
}

export interface LoadedWorkflow {
  workflow: CompiledWorkflow;
  identity: WorkflowIdentity;
}

/**
 * Called before each step that may run workflow code (awaited, so the source resolver's report
 * of it is on its way before the code runs): a hang or crash can then name the file and step.
 */
export type LoadStepReporter = (step: ResolveStep, file?: string) => Promise<void>;

export async function loadWorkflow(
  ref: string | WorkflowRef,
  dirs: SourceDirs,
  onStep: LoadStepReporter = () => Promise.resolve(),
): Promise<LoadedWorkflow> {
  const target = typeof ref === "string" ? resolveWorkflowRef(ref, dirs) : ref;
  if (target.kind === "builtin") {
    const builtin = findBuiltin(target.id);
    if (!builtin) {
      throw new WorkflowLoadError("workflowNotFound", `Built-in workflow not found: ${target.id}`);
    }
    const workflow = compileOrThrow(builtin.definition, new WeakMap(), `builtin:${target.id}`);
    return {
      workflow,
      identity: {
        workflowSource: {
          root: { kind: "builtin", id: builtin.id, revision: builtin.revision },
          mounted: [],
        },
        definitionDigest: fastFingerprint(workflow.snapshot),
      },
    };
  }
  installWorkflowHooks();
  const session = openLoadSession();
  try {
    const root = target.path;
    await onStep("load", root);
    const def = await importDefinition(root, session);
    const includes = new WeakMap<WorkflowDefinition, Map<string, WorkflowDefinition>>();
    const builtins = new Map<string, MountedSource>();
    await preloadIncludes(def, root, [root], session, dirs, includes, builtins, onStep);
    await onStep("compile", root);
    const workflow = compileOrThrow(def, includes, root);
    // A built-in definition the file imported (re-exported, or included by object) pins its
    // revision like an included file pins its hash.
    for (const b of builtinsIn(workflow.root)) {
      builtins.set(b.id, { kind: "builtin", id: b.id, revision: b.revision });
    }
    const rootHash = session.files.get(root) ?? hashFile(root);
    if (rootHash === null) {
      throw new WorkflowLoadError("workflowNotFound", `Workflow file not found: ${root}`, root);
    }
    const mounted: MountedSource[] = [...session.files]
      .filter(([path]) => path !== root)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([path, hash]) => ({ kind: "file" as const, path, hash }));
    mounted.push(...[...builtins.values()]);
    return {
      workflow,
      identity: {
        workflowSource: { root: { kind: "file", path: root, hash: rootHash }, mounted },
        definitionDigest: fastFingerprint(workflow.snapshot),
      },
    };
  } finally {
    closeLoadSession(session);
  }
}

async function importDefinition(path: string, session: LoadSession): Promise<WorkflowDefinition> {
  if (!existsSync(path)) {
    throw new WorkflowLoadError("workflowNotFound", `Workflow file not found: ${path}`, path);
  }
  let mod: Record<string, unknown>;
  try {
    mod = await importModule(sessionUrl(pathToFileURL(path).href, session));
  } catch (error) {
    throw translateImportError(error, path);
  }
  const def = mod.default;
  if (def === undefined) {
    throw new WorkflowLoadError(
      "noDefaultExport",
      `Workflow file has no default export: ${path}: add "export default defineWorkflow({...})"`,
      path,
    );
  }
  if (!isWorkflowDefinition(def)) {
    throw new WorkflowLoadError(
      "invalidDefinition",
      `Default export of ${path} is not a workflow definition: build it with defineWorkflow({...})`,
      path,
    );
  }
  return def;
}

/** Loads string includes (`"./child.workflow.ts"`, a name, `builtin:<id>`) ahead of compiling. */
async function preloadIncludes(
  def: WorkflowDefinition,
  file: string,
  chain: string[],
  session: LoadSession,
  dirs: SourceDirs,
  resolved: WeakMap<WorkflowDefinition, Map<string, WorkflowDefinition>>,
  builtins: Map<string, MountedSource>,
  onStep: LoadStepReporter,
): Promise<void> {
  for (const spec of Object.values(def.includes ?? {})) {
    const ref = spec.workflow;
    if (typeof ref !== "string") {
      const childFile = ref.source ? sourceFile(ref.source) ?? file : file;
      await preloadIncludes(ref, childFile, chain, session, dirs, resolved, builtins, onStep);
      continue;
    }
    const base = def.source ? sourceFile(def.source) ?? file : file;
    const target = ref.startsWith(".") || isAbsolute(ref)
      ? { kind: "file" as const, path: resolve(dirname(base), ref) }
      : resolveWorkflowRef(ref, dirs);
    let child: WorkflowDefinition;
    if (target.kind === "builtin") {
      const b = findBuiltin(target.id)!;
      builtins.set(b.id, { kind: "builtin", id: b.id, revision: b.revision });
      child = b.definition;
    } else {
      if (chain.includes(target.path)) {
        throw new WorkflowLoadError(
          "sourceCycle",
          `Source cycle in workflow includes: ${[...chain, target.path].join(" -> ")}`,
          target.path,
        );
      }
      await onStep("include", target.path);
      child = await importDefinition(target.path, session);
      await preloadIncludes(
        child,
        target.path,
        [...chain, target.path],
        session,
        dirs,
        resolved,
        builtins,
        onStep,
      );
    }
    let map = resolved.get(def);
    if (!map) resolved.set(def, map = new Map());
    map.set(ref, child);
  }
}

function builtinsIn(scope: CompiledScope): BuiltinWorkflow[] {
  const own = builtinOfDefinition(scope.definition);
  return [
    ...(own ? [own] : []),
    ...[...scope.children.values()].flatMap((child) => builtinsIn(child)),
  ];
}

function compileOrThrow(
  def: WorkflowDefinition,
  includes: WeakMap<WorkflowDefinition, Map<string, WorkflowDefinition>>,
  where: string,
): CompiledWorkflow {
  try {
    return compileWorkflow(def, {
      resolveInclude: (ref, parent) => {
        const child = includes.get(parent)?.get(ref);
        if (!child) {
          throw new WorkflowDefinitionError("invalidGraph", `Include "${ref}" was not loaded`);
        }
        return child;
      },
    });
  } catch (error) {
    if (error instanceof WorkflowDefinitionError) {
      throw new WorkflowLoadError(error.code, `${error.message} (${where})`, where);
    }
    throw error;
  }
}

function sourceFile(source: string): string | null {
  try {
    return source.startsWith("file:") ? fileURLToPath(source.replace(/[?#].*$/, "")) : source;
  } catch {
    return null;
  }
}

/** Turns an import failure into a one-line, located error. */
export function translateImportError(error: unknown, path: string): WorkflowLoadError {
  const e = error as { code?: string; name?: string; stack?: string };
  const where = locate(e.stack) ?? path;
  const detail = errorMessage(error, 500);
  if (error instanceof WorkflowLoadError) return error;
  if (e.code === "ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX") {
    return new WorkflowLoadError(
      "unsupportedTypeScript",
      `Unsupported TypeScript in ${where}: ${detail}: workflow files must be strip-only TypeScript: write an enum as a const object (const Color = { Red: "red" } as const), a namespace as a module or plain object, a parameter property as a field assigned in the constructor, and type imports as "import type"`,
      where,
    );
  }
  // V8 reports a missing named export as a SyntaxError at link time: the file parsed, an import
  // names something its module lacks.
  if (e.name === "SyntaxError" && /does not provide an export named/.test(detail)) {
    return new WorkflowLoadError("moduleNotFound", missingExport(detail, where), where);
  }
  if (e.code === "ERR_INVALID_TYPESCRIPT_SYNTAX" || e.name === "SyntaxError") {
    return new WorkflowLoadError("syntaxError", `Syntax error in ${where}: ${detail}`, where);
  }
  // By name, not class: a definition error may come from another copy of this module.
  if (e.name === "WorkflowDefinitionError" && typeof e.code === "string") {
    return new WorkflowLoadError(e.code, `${detail} (${where})`, where);
  }
  if (e.code === "ERR_MODULE_NOT_FOUND" || e.code === "ERR_UNSUPPORTED_DIR_IMPORT") {
    return new WorkflowLoadError(
      "moduleNotFound",
      `Cannot load a module of ${path}: ${detail}`,
      where,
    );
  }
  return new WorkflowLoadError(
    "loadFailed",
    `Workflow file failed to load: ${where}: ${detail}`,
    where,
  );
}

/**
 * A missing named export: a 0.12 name this version dropped gets what to use instead; a name
 * from the file's own modules may be a type imported without `type`.
 */
function missingExport(detail: string, where: string): string {
  const m = /requested module '([^']+)' does not provide an export named '([^']+)'/.exec(detail);
  const hint = m ? missingExportHint(m[1], m[2]) : null;
  if (hint !== null) return `Missing export in ${where}: ${hint}`;
  const typeHint = m && /^\.{0,2}\//.test(m[1])
    ? ` (if ${m[2]} is a type, import it with "import type")`
    : "";
  return `Missing export in ${where}: ${detail}${typeHint}`;
}

/** `path:line` of the first frame in a workflow file (not in the engine itself). */
function locate(stack: string | undefined): string | null {
  if (!stack) return null;
  const first = /^(\/[^\n]*?):(\d+)\n/.exec(stack);
  if (first) return `${first[1]}:${first[2]}`;
  const frame = /(file:\/\/[^\s)]*?piw-load=[^\s):]*):(\d+)(?::\d+)?/.exec(stack);
  if (frame) {
    try {
      return `${fileURLToPath(frame[1].replace(/[?#].*$/, ""))}:${frame[2]}`;
    } catch {
      return null;
    }
  }
  return null;
}
