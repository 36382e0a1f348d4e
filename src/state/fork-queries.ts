/**
 * What a fork (`run.rerun`) or a source re-pin (`run.resume --accept-source`) reads of a run
 * before it asks a resolver child about the workflow file: the recorded source, input and how it
 * runs. Private fields (project path, input, source paths, session): never printed.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { type StateStore } from "./store.ts";
import { queryOneArgs } from "./statements.ts";
import { decodeValue } from "./values.ts";

export interface RunOrigin {
  runId: string;
  workflowRef: string;
  projectPath: string;
  workflowSource: JsonValue;
  /** The recorded source as stored (canonical JSON), to compare with a resolved one. */
  workflowSourceText: string;
  definitionDigest: string;
  input: JsonValue;
  inputHash: string;
  state: string;
  queueState: string;
  blockedReason: string | null;
  executionMode: "interactive" | "headless";
  /** A headless run's recorded Pi command and model arguments. */
  pi: { command: string; args: string[] } | null;
}

export function readRunOrigin(store: StateStore, runId: string): RunOrigin | undefined {
  const row = queryOneArgs<{
    workflow_ref: string;
    project_path: string;
    workflow_source_json: string;
    definition_digest: string;
    input_json: string;
    input_hash: string;
    state: string;
    queue_state: string;
    blocked_reason: string | null;
    execution_mode: "interactive" | "headless";
    pi_command: string | null;
    pi_args_json: string | null;
  }>(
    store,
    "SELECT r.workflow_ref, r.project_path, r.workflow_source_json, r.definition_digest, " +
      "r.input_json, r.input_hash, r.state, q.state AS queue_state, r.blocked_reason, " +
      "b.execution_mode, b.pi_command, b.pi_args_json FROM runs r " +
      "JOIN run_queue q ON q.run_id = r.run_id JOIN run_bindings b ON b.run_id = r.run_id " +
      "WHERE r.run_id = ?1",
    runId,
  );
  if (!row) return undefined;
  return {
    runId,
    workflowRef: row.workflow_ref,
    projectPath: row.project_path,
    workflowSource: decodeValue(row.workflow_source_json) ?? null,
    workflowSourceText: row.workflow_source_json,
    definitionDigest: row.definition_digest,
    input: decodeValue(row.input_json) ?? null,
    inputHash: row.input_hash,
    state: row.state,
    queueState: row.queue_state,
    blockedReason: row.blocked_reason,
    executionMode: row.execution_mode,
    pi: row.pi_command === null
      ? null
      : { command: row.pi_command, args: (decodeValue(row.pi_args_json) ?? []) as string[] },
  };
}
