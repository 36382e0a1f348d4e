/**
 * `pi-workflows worker --resolve`: the supervised source-resolver child. It reads one request
 * (workflow reference, raw input, project directory), loads and compiles the workflow, runs its
 * input normalizer and answers with the identity `run.start` records, or a clear error. The host
 * never imports workflow code; this child does, then exits.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { ResolveResult } from "../protocol/resolve-messages.ts";
import type { WorkflowSource } from "../protocol/worker-launch.ts";
import { parseResolveRequest, RESOLVE_RESULT_SCHEMA } from "../protocol/resolve-messages.ts";
import { RESOLVE_PROGRESS_SCHEMA, type ResolveStep } from "../protocol/resolve-progress.ts";
import { errorMessage } from "../workflows/errors.ts";
import { type LoadStepReporter, loadWorkflow } from "../workflows/sources/load-workflow.ts";
import { saveStripped } from "../workflows/sources/stripped-sources.ts";
import { publishFullAuthoringApi } from "../controllers/authoring-api.ts";
import {
  normalizeWorkflowInput,
  resolveWorkflowTitle,
  workflowHasAgentSteps,
  workflowNeedsOriginSession,
} from "../workflows/sources/workflow-input.ts";
import type { WorkerChannel } from "./channel.ts";

export async function resolveSource(channel: WorkerChannel): Promise<number> {
  const request = parseResolveRequest(await channel.firstFrame());
  let result: ResolveResult;
  if (!request.ok) {
    result = { ok: false, code: "protocolRejected", message: request.error };
  } else {
    // Each step is reported before it runs, so a hang or crash in it can be named.
    const report = (step: ResolveStep, file?: string) =>
      channel.send({ schema: RESOLVE_PROGRESS_SCHEMA, step, ...(file ? { file } : {}) });
    result = await resolve(request.value, report);
  }
  // The run's TypeScript files stripped once, for the fresh instances a kept run process loads
  // of them (stripped-sources.ts): before the answer, since the host stops this child once it
  // has read it (0.4 ms a file, Node's stripper running here already).
  if (result.ok) saveStripped(result.workflowSource as WorkflowSource);
  await channel.send({ schema: RESOLVE_RESULT_SCHEMA, ...result });
  return result.ok ? 0 : 1;
}

async function resolve(
  request: { workflow: string; input: JsonValue; cwd: string; agentDir?: string },
  report: LoadStepReporter,
): Promise<ResolveResult> {
  try {
    // Workflow code (module top level, the input normalizer) runs in the run's project.
    process.chdir(request.cwd);
  } catch {
    return { ok: false, code: "invalidCwd", message: "The project directory cannot be entered" };
  }
  try {
    publishFullAuthoringApi();
    await report("find");
    const { workflow, identity } = await loadWorkflow(request.workflow, {
      cwd: request.cwd,
      ...(request.agentDir ? { agentDir: request.agentDir } : {}),
    }, report);
    const root = identity.workflowSource.root;
    const file = root.kind === "file" ? root.path : undefined;
    await report("input", file);
    const { input, inputHash } = normalizeWorkflowInput(workflow, request.input);
    await report("title", file);
    const title = await resolveWorkflowTitle(workflow, input);
    return {
      ok: true,
      workflowName: workflow.name,
      title,
      workflowSource: identity.workflowSource,
      definitionDigest: identity.definitionDigest,
      definition: workflow.snapshot,
      input,
      inputHash,
      needsInteractive: workflowNeedsOriginSession(workflow),
      needsAgent: workflowHasAgentSteps(workflow),
    };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return {
      ok: false,
      code: typeof code === "string" ? code : "workflowLoadFailed",
      message: errorMessage(error, 2000),
    };
  }
}
