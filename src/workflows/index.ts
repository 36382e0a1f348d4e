/**
 * What the worker, the source resolver and the host's front half use from this layer. Workflow
 * authors use `mod.ts` instead.
 */
export * from "./engine.ts";
export type { AcceptResult, AgentStepExecutor, AgentStepRequest } from "./agent-executor.ts";
export { unavailableAgentExecutor } from "./agent-executor.ts";
export * from "./step-contract.ts";
export { normalizeAgentOutput, parseTolerantJson } from "./agent-output.ts";
export { nodeEffect } from "./compile.ts";
export type { CompiledEdge, CompiledScope, CompileOptions } from "./compile.ts";
export { NodeFailure, WorkflowDefinitionError, WorkflowLoadError } from "./errors.ts";
export { validateHumanResponse } from "./human-decision.ts";
export { checkUpdate, estimateProgress, PROGRESS_SCHEMA, UPDATE_LIMITS } from "./updates.ts";
export { runShell } from "./shell-runner.ts";
export { BUILTIN_WORKFLOWS, findBuiltin } from "./sources/builtin-catalog.ts";
export {
  defaultAgentDir,
  discoverWorkflows,
  resolveWorkflowRef,
  WORKFLOW_SUFFIXES,
  workflowStem,
} from "./sources/discovery.ts";
export type { DiscoveredWorkflow, SourceDirs, WorkflowRef } from "./sources/discovery.ts";
export {
  compareMountedSources,
  compareSourceIdentity,
  describeSourceChanges,
  hashFile,
  verifySourceIdentity,
} from "./sources/identity.ts";
export type { SourceChange, SourceCheck } from "./sources/identity.ts";
export { loadWorkflow } from "./sources/load-workflow.ts";
export type { LoadedWorkflow, WorkflowIdentity } from "./sources/load-workflow.ts";
export {
  normalizeWorkflowInput,
  resolveWorkflowTitle,
  workflowHasAgentSteps,
  workflowNeedsOriginSession,
} from "./sources/workflow-input.ts";
