/**
 * The public authoring API as one object. `mod.ts` re-exports these names, and the loader
 * publishes this object at `globalThis[Symbol.for("pi-workflows.api")]` so a workflow file that
 * imports `pi-workflows` or `@osolmaz/pi-workflows` gets the very same functions as the host.
 */
import {
  action,
  agent,
  agentGroup,
  assistantMessage,
  checkpoint,
  compute,
  notify,
  shell,
} from "./nodes.ts";
import { decision, decisionEdge } from "./decision.ts";
import { defineWorkflow, defineWorkflowRegistry, isWorkflowDefinition } from "./define-workflow.ts";
import {
  choice,
  defineHumanChoices,
  humanDecision,
  humanDecisionEdge,
  textInput,
} from "./human-decision.ts";
import { includedResult, includeWorkflow } from "./include.ts";
import { parseTolerantJson } from "./agent-output.ts";
import { PROGRESS_SCHEMA } from "./updates.ts";
import {
  COMMAND_BATCH_LIMITS,
  COMMAND_BATCH_RESULT_SCHEMA,
  MAX_COMMAND_BATCH_CONCURRENCY,
  MAX_COMMAND_BATCH_ITEMS,
  MAX_COMMAND_BATCH_OUTPUT_CHARS,
  MAX_COMMAND_BATCH_TIMEOUT_MS,
  runCommandBatch,
} from "./command-batch.ts";

export const API_GLOBAL_KEY: unique symbol = Symbol.for("pi-workflows.api") as never;

export const authoringApi = Object.freeze({
  action,
  agent,
  agentGroup,
  assistantMessage,
  checkpoint,
  choice,
  COMMAND_BATCH_LIMITS,
  COMMAND_BATCH_RESULT_SCHEMA,
  compute,
  decision,
  decisionEdge,
  defineHumanChoices,
  defineWorkflow,
  defineWorkflowRegistry,
  humanDecision,
  humanDecisionEdge,
  includedResult,
  includeWorkflow,
  isWorkflowDefinition,
  MAX_COMMAND_BATCH_CONCURRENCY,
  MAX_COMMAND_BATCH_ITEMS,
  MAX_COMMAND_BATCH_OUTPUT_CHARS,
  MAX_COMMAND_BATCH_TIMEOUT_MS,
  notify,
  parseTolerantJson,
  PROGRESS_SCHEMA,
  runCommandBatch,
  shell,
  textInput,
});
