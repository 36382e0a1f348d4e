/**
 * The pi-workflows authoring API. Workflow and controller files import these names from
 * `pi-workflows` or `@osolmaz/pi-workflows`; see docs/authoring.md and docs/controllers.md.
 */
export {
  action,
  agent,
  agentGroup,
  assistantMessage,
  checkpoint,
  compute,
  notify,
  shell,
} from "./src/workflows/nodes.ts";
export { decision, decisionEdge } from "./src/workflows/decision.ts";
export {
  defineWorkflow,
  defineWorkflowRegistry,
  isWorkflowDefinition,
} from "./src/workflows/define-workflow.ts";
export {
  choice,
  defineHumanChoices,
  humanDecision,
  humanDecisionEdge,
  textInput,
} from "./src/workflows/human-decision.ts";
export { includedResult, includeWorkflow } from "./src/workflows/include.ts";
export type { IncludedResult } from "./src/workflows/include.ts";
export { parseTolerantJson } from "./src/workflows/agent-output.ts";
export { PROGRESS_SCHEMA } from "./src/workflows/updates.ts";
export {
  COMMAND_BATCH_LIMITS,
  COMMAND_BATCH_RESULT_SCHEMA,
  MAX_COMMAND_BATCH_CONCURRENCY,
  MAX_COMMAND_BATCH_ITEMS,
  MAX_COMMAND_BATCH_OUTPUT_CHARS,
  MAX_COMMAND_BATCH_TIMEOUT_MS,
  runCommandBatch,
} from "./src/workflows/command-batch.ts";
export type {
  CommandBatchItem,
  CommandBatchItemResult,
  CommandBatchResult,
} from "./src/workflows/command-batch.ts";
export type { ProgressData } from "./src/workflows/updates.ts";
export type * from "./src/workflows/types.ts";
export { defineController, isControllerDefinition } from "./src/controllers/define-controller.ts";
export {
  applyStatusPatch,
  conditionFalse,
  conditionTrue,
  conditionUnknown,
  findCondition,
  isConditionTrue,
  mergeConditions,
} from "./src/controllers/conditions.ts";
export type {
  ChildWorkflowRecord,
  ChildWorkflowRef,
  ChildWorkflowRequest,
  ChildWorkflowState,
  Condition,
  ConditionInput,
  ConditionStatus,
  ControllerDefinition,
  ControllerSpec,
  ControllerStatus,
  EffectRequest,
  EffectResult,
  ReconcileContext,
  ReconcileResult,
  Resource,
  ResourceMetadata,
  StatusPatch,
} from "./src/controllers/types.ts";
export type { JsonValue } from "./src/protocol/canonical-json.ts";
