/**
 * The test kit for workflow authors (`@osolmaz/pi-workflows/testing`, docs/testing.md):
 * `testWorkflow` runs a workflow on the real host, engine and workers with scripted model
 * outputs and human answers, virtual time, and optionally a crash at every durable boundary.
 */
export { testWorkflow, type TestWorkflowOptions, type WorkflowRef } from "./test-workflow.ts";
export {
  type HumanAnswer,
  type HumanAnswerFn,
  MissingAnswerError,
  type StepAnswer,
  type StepAnswerFn,
  type StepAsk,
  timeOut,
} from "./answers.ts";
export { CrashBoundaryError } from "./crash-boundaries.ts";
export type {
  AttemptSummary,
  BoundaryOutcome,
  CrashReport,
  RunEffect,
  RunEvent,
  RunStatus,
  WorkflowTestResult,
} from "./run-result.ts";
export { test, type TestFn } from "./test-registry.ts";
