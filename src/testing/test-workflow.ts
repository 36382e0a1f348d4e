/**
 * `testWorkflow`: runs one workflow on the real engine, host and workers (kit-host.ts) over a
 * fresh state directory, with the model's outputs and people's answers scripted (answers.ts,
 * drive-run.ts), and returns what the run did (run-result.ts). With `crash: "every-boundary"`
 * it then runs it again once per durable boundary with a real worker SIGKILL there
 * (crash-boundaries.ts) and fails if any recovery ends differently.
 */
import { realpathSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { definedIn, isWorkflowDefinition } from "../workflows/define-workflow.ts";
import { builtinOfDefinition } from "../workflows/sources/builtin-catalog.ts";
import type { WorkflowDefinition } from "../workflows/types.ts";
import { type HumanAnswer, scriptedResults, type StepAnswer } from "./answers.ts";
import { crashEveryBoundary } from "./crash-boundaries.ts";
import { startKitHost } from "./kit-host.ts";
import type { WorkflowTestResult } from "./run-result.ts";
import { emptyDir, type KitRun, runScenario, type Scenario } from "./run-scenario.ts";

export interface TestWorkflowOptions {
  /** The run's raw input, before the workflow's own `input` normalizer. Default null. */
  input?: JsonValue;
  /**
   * Per step id: the model's output for an agent or decision step, or a scripted result for an
   * action or shell node (which then does not run). A step the run reaches without one fails
   * the test with the step's prompt.
   */
  answers?: Readonly<Record<string, StepAnswer>>;
  /**
   * Per checkpoint or human decision node id: the answer, or `timeOut`. A wait with no entry
   * ends the test there: the result's `state` is `waiting` and `waiting` says what it asks.
   */
  human?: Readonly<Record<string, HumanAnswer>>;
  /**
   * `virtual` (default): time jumps to a deadline the test lets pass (`timeOut`), so a 24 h
   * wait takes milliseconds. `system`: real time only.
   */
  clock?: "virtual" | "system";
  /**
   * `every-boundary`: after the normal run, run the workflow again once per durable boundary it
   * passed, SIGKILLing the worker there, and check that every recovery ends like the normal run.
   */
  crash?: "every-boundary";
  /**
   * Where the run works (shell commands run here). Default: an empty temp directory. With
   * `crash` every run works in its own copy of it, and the copies are compared.
   */
  projectDir?: string;
  /** Real milliseconds one run may take before the test fails. Default 60,000. */
  timeoutMs?: number;
}

export type WorkflowRef = string | URL | WorkflowDefinition;

/** Runs `workflow` to its end or to an unanswered wait; see docs/testing.md. */
export async function testWorkflow(
  workflow: WorkflowRef,
  options: TestWorkflowOptions = {},
): Promise<WorkflowTestResult> {
  const ref = await workflowRef(workflow);
  const scenario: Scenario = {
    ref,
    input: options.input ?? null,
    answers: options.answers ?? {},
    human: options.human ?? {},
    virtualClock: (options.clock ?? "virtual") === "virtual",
    timeoutMs: options.timeoutMs ?? 60_000,
  };
  const host = await startKitHost({ virtualClock: scenario.virtualClock });
  try {
    const script = join(host.root, "scripted.json");
    writeFileSync(script, JSON.stringify(scriptedResults(scenario.answers)));
    const kit: KitRun = { host, scenario, script };
    if (options.crash === undefined) {
      const dir = options.projectDir === undefined
        ? emptyDir(join(host.root, "project"))
        : realpathSync(options.projectDir);
      return await runScenario(kit, dir, {});
    }
    if (options.crash !== "every-boundary") {
      throw new TypeError(
        `testWorkflow: crash must be "every-boundary", got ${String(options.crash)}`,
      );
    }
    return await crashEveryBoundary(kit, options.projectDir);
  } finally {
    await host.close();
  }
}

async function workflowRef(workflow: WorkflowRef): Promise<string> {
  if (workflow instanceof URL) return fileURLToPath(workflow);
  if (typeof workflow === "string") {
    if (workflow.startsWith("builtin:")) return workflow;
    return resolve(workflow);
  }
  if (isWorkflowDefinition(workflow)) {
    const builtin = builtinOfDefinition(workflow);
    if (builtin) return `builtin:${builtin.id}`;
    return await fileOfDefinition(workflow);
  }
  throw new TypeError(
    "testWorkflow: expected a workflow file path, a file URL or a built-in definition",
  );
}

/**
 * The file whose default export `def` is: a run's worker loads the workflow from its file, as in
 * production, so a definition made anywhere else (inline in a test) cannot run there.
 */
async function fileOfDefinition(def: WorkflowDefinition): Promise<string> {
  const url = definedIn(def);
  const hint = `define workflow "${def.name}" as the default export of its own file ` +
    "(export default defineWorkflow({...})) and pass that definition or the file " +
    '(new URL("./my.workflow.ts", import.meta.url)): its run\'s worker loads it from the file';
  if (url === undefined) throw new TypeError(`testWorkflow: ${hint}`);
  const module = new URL(url);
  module.search = "";
  module.hash = "";
  let exported: unknown;
  try {
    exported = (await import(url)).default;
  } catch {
    exported = undefined;
  }
  if (exported !== def) {
    throw new TypeError(
      `testWorkflow: the definition was made in ${fileURLToPath(module)}, which does not ` +
        `export it as its default: ${hint}`,
    );
  }
  return fileURLToPath(module);
}
