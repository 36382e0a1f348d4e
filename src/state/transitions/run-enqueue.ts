/** `queued/queued`: a new run enters the global queue (run.start). */
import type { Budget } from "../../protocol/budget.ts";
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { DefinitionSnapshot } from "../../protocol/definition-snapshot.ts";
import { type CommandReceiptInput, recordHostCommandInTx } from "../host-commands.ts";
import { appendHistory } from "../journal.ts";
import { RefusedError } from "../errors.ts";
import { sessionReservation } from "../interaction-queries.ts";
import { type StateStore } from "../store.ts";
import { execute } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { encodeValue } from "../values.ts";
import type { RunEnvironment } from "../../protocol/run-environment.ts";
import { insertRunEnvironment } from "../run-environments.ts";
import { supersedeSessionIntentsInTx } from "./turn-intents.ts";
import type { PiContext } from "../../protocol/pi-launch.ts";
import { runSessionFile } from "../run-sessions.ts";

export interface RunBindingInput {
  executionMode: "interactive" | "headless";
  /** Required for interactive runs. */
  originSessionId?: string | null;
  /**
   * How a headless run starts Pi (command, recorded model arguments and what it loads); null:
   * none found.
   */
  pi?: { command: string; args: readonly string[]; context?: PiContext } | null;
}

export interface EnqueueRunOptions {
  /** Defaults to `store.ids.next("run")`. */
  runId?: string;
  workflowName: string;
  /** The canonical workflow reference (`builtin:x` or absolute path). */
  workflowRef: string;
  title?: string | null;
  projectPath: string;
  /** Source identity exactly as the worker launch envelope carries it. */
  workflowSource: JsonValue;
  definitionDigest: string;
  /** The definition snapshot of that digest, kept once per digest for viewers. */
  definition?: DefinitionSnapshot;
  input: JsonValue;
  inputHash: string;
  binding: RunBindingInput;
  /** The run environment, recorded privately (run-environments.ts); absent: none recorded. */
  environment?: RunEnvironment;
  /** Names of the provider credentials the host holds in memory for the run (never values). */
  credentialNames?: readonly string[];
  /** Those of them the user named (`--env`): the run's workers get them too. */
  runSecretNames?: readonly string[];
  parentRunId?: string | null;
  /** A fork: the run, node and attempt it reruns from (run-fork.ts adds the adopted attempts). */
  forkedFrom?: ForkPoint | null;
  /** Scheduling priority; higher launches first. */
  priority?: number;
  /** Earliest launch time; defaults to now. */
  availableAt?: number;
  /** What the run's model steps may spend (protocol/budget.ts); absent: no limit. */
  budget?: Budget;
  receipt?: CommandReceiptInput;
}

export interface ForkPoint {
  runId: string;
  nodeId: string;
  /** The parent's attempt of that node: which visit the fork reruns. */
  attemptId: string;
}

export interface TransitionResult {
  runId: string;
  /** Run revision after the transition. */
  revision: number;
}

/** Inserts the run, its queue row and binding at revision 1 (event `run.queued`). */
export function enqueueRun(store: StateStore, opts: EnqueueRunOptions): TransitionResult {
  return writeTransaction(store, () => enqueueRunInTx(store, opts, store.clock.now()));
}

/** `enqueueRun` inside the caller's transaction (a controller's child run). */
export function enqueueRunInTx(
  store: StateStore,
  opts: EnqueueRunOptions,
  now: number,
): TransitionResult {
  if (opts.binding.executionMode === "interactive" && !opts.binding.originSessionId) {
    throw new TypeError("Cannot enqueue an interactive run: originSessionId is required");
  }
  const workflowSource = encodeValue("workflowSource", opts.workflowSource);
  const input = encodeValue("input", opts.input);
  const definition = opts.definition === undefined
    ? null
    : encodeValue("definition snapshot", opts.definition);
  const piArgs = opts.binding.pi ? encodeValue("pi args", [...opts.binding.pi.args]) : null;
  if (opts.binding.executionMode === "interactive") {
    requireFreeSession(store, opts.binding.originSessionId!);
  }
  const runId = opts.runId ?? store.ids.next("run");
  execute(
    store,
    "INSERT INTO runs (run_id, workflow_name, workflow_ref, title, state, paused, project_path, " +
      "workflow_source_json, definition_digest, input_json, input_hash, parent_run_id, " +
      "forked_from_run_id, forked_from_node_id, forked_from_attempt_id, " +
      "created_at, state_changed_at, run_no, budget_cost, budget_tokens) VALUES (:runId, " +
      ":workflowName, :workflowRef, :title, 'queued', 0, :projectPath, :workflowSource, " +
      ":definitionDigest, :input, :inputHash, :parentRunId, :forkRunId, :forkNodeId, " +
      ":forkAttemptId, :now, :now, (SELECT MAX(COALESCE((SELECT MAX(run_no) FROM runs), 0), " +
      "COALESCE((SELECT MAX(run_no) FROM run_prunes), 0)) + 1), " +
      ":budgetCost, :budgetTokens)",
    {
      runId,
      workflowName: opts.workflowName,
      workflowRef: opts.workflowRef,
      title: opts.title ?? null,
      projectPath: opts.projectPath,
      workflowSource,
      definitionDigest: opts.definitionDigest,
      input,
      inputHash: opts.inputHash,
      parentRunId: opts.parentRunId ?? null,
      forkRunId: opts.forkedFrom?.runId ?? null,
      forkNodeId: opts.forkedFrom?.nodeId ?? null,
      forkAttemptId: opts.forkedFrom?.attemptId ?? null,
      now,
      budgetCost: opts.budget?.maxCostUsd ?? null,
      budgetTokens: opts.budget?.maxTokens ?? null,
    },
  );
  execute(
    store,
    "INSERT INTO run_queue (run_id, state, available_at, priority, enqueued_seq, updated_at) " +
      "VALUES (:runId, 'queued', :availableAt, :priority, " +
      "(SELECT COALESCE(MAX(enqueued_seq), 0) + 1 FROM run_queue), :now)",
    { runId, availableAt: opts.availableAt ?? now, priority: opts.priority ?? 0, now },
  );
  execute(
    store,
    "INSERT INTO run_bindings (run_id, execution_mode, origin_session_id, pi_command, " +
      "pi_args_json, pi_context, pi_session_file, created_at) VALUES (:runId, :mode, :session, " +
      ":piCommand, :piArgs, :piContext, :piSession, :now)",
    {
      runId,
      mode: opts.binding.executionMode,
      session: opts.binding.originSessionId ?? null,
      piCommand: opts.binding.pi?.command ?? null,
      piArgs,
      piContext: opts.binding.pi ? opts.binding.pi.context ?? "none" : null,
      piSession: opts.binding.pi ? runSessionFile(store, runId) : null,
      now,
    },
  );
  if (opts.environment) {
    insertRunEnvironment(
      store,
      runId,
      opts.environment,
      opts.credentialNames,
      opts.runSecretNames,
    );
  }
  // A newer run of the session supersedes the turns still owed for earlier ones.
  if (opts.binding.executionMode === "interactive") {
    supersedeSessionIntentsInTx(store, opts.binding.originSessionId!, now);
  }
  if (definition !== null) {
    execute(
      store,
      "INSERT INTO workflow_definitions (definition_digest, snapshot_json, created_at) " +
        "VALUES (:digest, :definition, :now) ON CONFLICT (definition_digest) DO NOTHING",
      { digest: opts.definitionDigest, definition, now },
    );
  }
  appendHistory(store, runId, 1, now, {
    type: "run.queued",
    payload: { workflowName: opts.workflowName, executionMode: opts.binding.executionMode },
  });
  if (opts.receipt) recordHostCommandInTx(store, opts.receipt, { runId, revision: 1, now });
  return { runId, revision: 1 };
}

/**
 * The session reservation: one active (not terminal) interactive run per origin session,
 * checked in the enqueue transaction; released when that run ends.
 */
function requireFreeSession(store: StateStore, sessionId: string): void {
  const active = sessionReservation(store, sessionId);
  if (active === undefined) return;
  throw new RefusedError(
    "conflict",
    "sessionBusy",
    `This Pi session already has an active workflow run (${active.runId}); wait for it to end or cancel it first`,
  );
}
