/**
 * `pi-workflows worker --resolve`: the supervised source-resolver child. It reads one request
 * (workflow reference, raw input, project directory), loads and compiles the workflow, runs its
 * input normalizer and answers with the identity `run.start` records, or a clear error. The host
 * never imports workflow code; this child does, then exits.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { ResolveResult } from "../protocol/resolve-messages.ts";
import { parseResolveRequest, RESOLVE_RESULT_SCHEMA } from "../protocol/resolve-messages.ts";
import { errorMessage } from "../workflows/errors.ts";
import { loadWorkflow } from "../workflows/sources/load-workflow.ts";
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
    result = await resolve(request.value);
  }
  await channel.send({ schema: RESOLVE_RESULT_SCHEMA, ...result });
  return result.ok ? 0 : 1;
}

async function resolve(
  request: { workflow: string; input: JsonValue; cwd: string; agentDir?: string },
): Promise<ResolveResult> {
  try {
    // Workflow code (module top level, the input normalizer) runs in the run's project.
    process.chdir(request.cwd);
  } catch {
    return { ok: false, code: "invalidCwd", message: "The project directory cannot be entered" };
  }
  try {
    publishFullAuthoringApi();
    const { workflow, identity } = await loadWorkflow(request.workflow, {
      cwd: request.cwd,
      ...(request.agentDir ? { agentDir: request.agentDir } : {}),
    });
    const { input, inputHash } = normalizeWorkflowInput(workflow, request.input);
    return {
      ok: true,
      workflowName: workflow.name,
      title: await resolveWorkflowTitle(workflow, input),
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
