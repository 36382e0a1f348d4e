/**
 * Authoring types: what a `*.workflow.ts` file builds with `defineWorkflow` and the node
 * builders. Functions live only here and in the compiled graph; the durable record of a run
 * holds JSON only.
 */
import type { AnswerSchema } from "../protocol/answer-schema.ts";
import type { ScheduleDeclaration } from "../protocol/schedule-operations.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { NodeResultRecord } from "./node-result-record.ts";
import type {
  HumanChoices,
  HumanDecisionRequest,
  HumanDecisionTimeout,
} from "./human-decision-types.ts";

export type * from "./human-decision-types.ts";
export type * from "./node-result-record.ts";

/** Run-level facts a callback may read. */
export interface NodeRunState {
  runId: string;
  workflowName: string;
  /**
   * The run's canonical project path. Workers run in it: relative paths (a shell node's `cwd`,
   * file reads) resolve against it.
   */
  projectPath: string;
  /** Flattened id of the node being executed (`mount/child` inside includes). */
  nodeId: string;
  attemptId: string;
  /** 1-based visit number of this node in the run chain. */
  visit: number;
  /** Steps used so far, this one included. */
  stepsUsed: number;
  maxSteps: number;
  /** 0.12's names for facts the context also has: always `running` while a node runs. */
  status: "running";
  /** The same as the context's `input`, `outputs` and `results`. */
  input: unknown;
  outputs: Readonly<Record<string, any>>;
  results: Readonly<Record<string, NodeResultRecord>>;
  /** The same as `nodeId` and `attemptId`. */
  currentNode: string;
  currentAttemptId: string;
}

/** The context every node callback receives. */
export interface NodeContext<I = any> {
  input: I;
  /**
   * Latest ok output per node id (local ids inside an included workflow); read-only. Typed
   * loosely so callbacks can read fields directly; the values are JSON.
   */
  outputs: Readonly<Record<string, any>>;
  /** Latest result record per node id. */
  results: Readonly<Record<string, NodeResultRecord>>;
  state: NodeRunState;
  signal: AbortSignal;
}

export interface WorkflowUpdate {
  /** `^[a-z][a-z0-9.-]{0,63}$`; `progress` carries the progress schema. */
  type: string;
  key: string;
  data: JsonValue;
}

/** What a function action's `publishUpdate` resolves to once the update is recorded. */
export interface UpdateReceipt {
  type: string;
  key: string;
  /** When the worker took the update (ISO 8601). */
  at: string;
}

export interface ActionContext<I = any> extends NodeContext<I> {
  /** Throws when the update is refused (shape, size, rate); resolves to a receipt. */
  publishUpdate(update: WorkflowUpdate): Promise<UpdateReceipt>;
}

/** A number of milliseconds, `null` for no wall-clock limit, or a callback deciding either. */
export type TimeoutSpec<I = any> =
  | number
  | null
  | ((ctx: NodeContext<I>) => number | null | Promise<number | null>);

export interface CommonNodeOptions<I = any> {
  /** Default 15 minutes. */
  timeoutMs?: TimeoutSpec<I>;
  /** A short label shown by status and viewers. */
  statusDetail?: string;
}

export type TextSpec<I = any> = string | ((ctx: NodeContext<I>) => string | Promise<string>);

/** Options of the model steps that may run in a headless Pi child (agent, decision). */
export interface ModelStepOptions {
  /**
   * Whether an attempt interrupted by a crash (the worker or host died mid-turn) runs again as a
   * new attempt, as a model turn usually can. Default true. Set false when the step's tools must
   * not run twice: an interrupted attempt then blocks the run `effectAmbiguous` for an operator.
   */
  rerunAfterCrash?: boolean;
}

export interface AgentNode<I = any> extends CommonNodeOptions<I>, ModelStepOptions {
  kind: "agent";
  prompt: TextSpec<I>;
  expectedOutput?: string;
  /**
   * A Pi tool allowlist for the step's headless session (`["read", "grep", "find", "ls"]` for a
   * read-only step); an interactive step runs in the origin session with its tools.
   */
  tools?: string[];
  validate?: (output: JsonValue, ctx: NodeContext<I>) => unknown;
}

export interface DecisionNode<I = any> extends CommonNodeOptions<I>, ModelStepOptions {
  kind: "decision";
  question: TextSpec<I>;
  choices: readonly string[];
  field: string;
}

export interface AssistantMessageNode<I = any> extends CommonNodeOptions<I> {
  kind: "assistantMessage";
  prompt: TextSpec<I>;
}

export interface ComputeNode<I = any> extends CommonNodeOptions<I> {
  kind: "compute";
  run: (ctx: NodeContext<I>) => unknown;
}

/**
 * A managed effect: the host reserves it under `type` + `key` before the node runs and settles
 * it after, so a repeated attempt (after a crash) adopts the stored receipt instead of applying
 * the effect twice. Without it an interrupted external node blocks the run for review.
 */
export interface ManagedEffect<I = any> {
  /** Effect type, part of the effect key. Default: the node kind. */
  type?: string;
  /** The author's idempotency key, stable for "the same effect" (e.g. an external request id). */
  key: (ctx: NodeContext<I>) => string | Promise<string>;
  /**
   * Read-back check: whether the effect already applied in the external system. Return its
   * receipt (any JSON) when it did, `null` when it did not.
   */
  observe?: (ctx: NodeContext<I>) => unknown;
}

export interface ActionNode<I = any> extends CommonNodeOptions<I> {
  kind: "action";
  run: (ctx: ActionContext<I>) => unknown;
  effect?: ManagedEffect<I>;
}

/** What a shell node's `exec` returns: the command to spawn. */
export interface ShellCommand {
  command: string;
  args?: string[];
  /** Absolute, or relative to the process working directory. */
  cwd?: string;
  /** Merged over the worker's environment. */
  env?: Record<string, string>;
  stdin?: string;
  /**
   * Run through `/bin/sh -c` (`true`) or through the named shell program (`"/bin/bash"`) instead
   * of spawning `command` directly. Default false.
   */
  shell?: boolean | string;
  /** Accept a non-zero exit code as a normal result. Default false. */
  allowNonZeroExit?: boolean;
  /** The command's own time limit (the node deadline still applies). */
  timeoutMs?: number;
  /** Characters kept per stream. Default 1,000,000. */
  maxOutputChars?: number;
}

export interface ShellResult {
  command: string;
  args: string[];
  cwd: string;
  stdout: string;
  stderr: string;
  exitCode: number | null;
  signal: string | null;
  durationMs: number;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
}

export interface ShellUpdates<I = any> {
  /** Streams whose lines are offered to `parseLine`. Default both. */
  streams?: ("stdout" | "stderr")[];
  /**
   * Called for each complete line. `ctx` is the node context plus `stream` and `publishUpdate`.
   * A parser in the 0.12 form gets the line as `{stream, text}`: one that destructures its first
   * parameter (`({ stream, text }, ctx) => ...`) or reads it as `line.text` / `line.stream`
   * (shell-line-form.ts). May be async.
   */
  parseLine(
    line: string,
    ctx: NodeContext<I> & {
      stream: "stdout" | "stderr";
      publishUpdate(update: WorkflowUpdate): void;
    },
  ):
    | WorkflowUpdate
    | WorkflowUpdate[]
    | null
    | undefined
    | Promise<WorkflowUpdate | WorkflowUpdate[] | null | undefined>;
}

export interface ShellNode<I = any> extends CommonNodeOptions<I> {
  kind: "shell";
  exec: (ctx: NodeContext<I>) => ShellCommand | Promise<ShellCommand>;
  parse?: (result: ShellResult, ctx: NodeContext<I>) => unknown;
  updates?: ShellUpdates<I>;
  effect?: ManagedEffect<I>;
}

export interface CheckpointNode<I = any> extends CommonNodeOptions<I> {
  kind: "checkpoint";
  summary?: TextSpec<I>;
  /** Computes the request shown to whoever answers; default `{summary}`. */
  run?: (ctx: NodeContext<I>) => unknown;
  /** The shape an answer must have (a JSON Schema subset); checked by the host. */
  answerSchema?: AnswerSchema;
}

export interface NotifyNode<I = any> extends CommonNodeOptions<I> {
  kind: "notify";
  message: TextSpec<I>;
  notifyKind: "progress" | "final";
}

export interface HumanDecisionNode<I = any> extends CommonNodeOptions<I> {
  kind: "humanDecision";
  /** Who answers: a name, or a function of the context returning one (as 0.12 allowed). */
  audience: string | ((ctx: NodeContext<I>) => string | Promise<string>);
  choices: HumanChoices;
  request: (ctx: NodeContext<I>) => HumanDecisionRequest | Promise<HumanDecisionRequest>;
  /**
   * The answer recorded when nobody answers within `afterMs`; a function may decide it from the
   * context (or return null for no timeout).
   */
  onTimeout?: HumanDecisionTimeout | ((ctx: NodeContext<I>) => HumanDecisionTimeout | null);
}

/** One agent of an `agentGroup`: its own headless Pi session, prompt and output rules. */
export interface AgentGroupMember {
  /** Unique in the group, `[A-Za-z_][A-Za-z0-9_-]*`; names the member in output and updates. */
  id: string;
  prompt: string;
  expectedOutput?: string;
  /** May throw to reject the member's submission (the message goes back to it) or normalize. */
  validate?: (output: JsonValue) => unknown;
  statusDetail?: string;
}

/** What one member of an agent group ended with. */
export type AgentGroupMemberResult =
  | { id: string; outcome: "ok"; output: JsonValue }
  | { id: string; outcome: "failed"; error: { code: string; message: string } };

export interface AgentGroupNode<I = any> extends CommonNodeOptions<I>, ModelStepOptions {
  kind: "agentGroup";
  /** The members of this attempt (1-16). */
  agents: (ctx: NodeContext<I>) => AgentGroupMember[] | Promise<AgentGroupMember[]>;
  /** Members running at once (1-8, default 4). */
  maxConcurrency?: number;
  /** Pi tool allowlist for every member (`["read", "grep", "find", "ls"]` for reviewers). */
  tools?: string[];
  /** The node fails when fewer members succeed (default 1; the group's size for "all"). */
  minSucceeded?: number;
}

export type WorkflowNode<I = any> =
  | AgentNode<I>
  | AgentGroupNode<I>
  | DecisionNode<I>
  | AssistantMessageNode<I>
  | ComputeNode<I>
  | ActionNode<I>
  | ShellNode<I>
  | CheckpointNode<I>
  | NotifyNode<I>
  | HumanDecisionNode<I>;

export type NodeKind = WorkflowNode["kind"];

export interface PlainEdge {
  from: string;
  to: string;
}

export interface SwitchEdge {
  from: string;
  /** `on`: `$.path`, `$output.path` or `$result.outcome|error.code|durationMs`. */
  switch: { on: string; cases: Record<string, string> };
}

export type WorkflowEdge = PlainEdge | SwitchEdge;

export interface WorkflowExit {
  /** The child's terminal node this exit leaves from. */
  from: string;
  /** May throw to reject the exit output, or return a replacement. */
  validate?: (output: JsonValue) => unknown;
}

export interface IncludeSpec {
  readonly __piwInclude: true;
  /** A definition object, or a path relative to the including file (resolved by the loader). */
  workflow: WorkflowDefinition | string;
  /** The child's raw input: a constant or a function of the parent context at entry. */
  input?: JsonValue | ((ctx: Omit<NodeContext, "signal">) => unknown);
  /** A definition the resolved child must match (contractId, exit names, input presence). */
  contract?: WorkflowDefinition;
}

/**
 * What a `presentationPrompt` callback receives (`finalOutput` and `state` as 0.12 named them):
 * at completion `output` is the run's output; while an interactive run waits at a checkpoint
 * (`state.status` `"waiting"`, `state.waitingOn` its node id) it is the checkpoint's request.
 */
export interface PresentationContext<I = any> {
  input: I;
  output: JsonValue;
  /** The same as `output`. */
  finalOutput: JsonValue;
  state: {
    runId: string;
    workflowName: string;
    status: "completed" | "waiting";
    /** The checkpoint the run waits at (only while `status` is `"waiting"`). */
    waitingOn?: string;
    input: I;
    outputs: Readonly<Record<string, any>>;
    results: Readonly<Record<string, NodeResultRecord>>;
    finalOutput: JsonValue;
  };
  signal: AbortSignal;
}

export interface WorkflowSpec<I = any> {
  name: string;
  /**
   * A stable identity of the workflow's input-and-exit contract (`pi-workflows.autoplan.v1`). An
   * include that declares a `contract` refuses a child with another one.
   */
  contractId?: string;
  /** A string, or a function of the input (may be async; 10 s bound) resolved once at start. */
  title?:
    | string
    | ((
      ctx: { input: I; workflowName: string },
    ) => string | undefined | Promise<string | undefined>);
  /** Validates and normalizes raw input; its result must be JSON. Default: identity. */
  input?: (raw: unknown) => I;
  /**
   * Instructions for the Pi turn that presents the run: once when it completes, and once each
   * time an interactive run waits at a checkpoint. Returning `undefined` (or blank) presents
   * nothing.
   */
  presentationPrompt?: string | ((ctx: PresentationContext<I>) => string | undefined);
  startAt: string;
  nodes: Record<string, WorkflowNode<I>>;
  edges?: WorkflowEdge[];
  includes?: Record<string, IncludeSpec>;
  exits?: Record<string, WorkflowExit>;
  /** Default 100; counts node attempts across pauses, restarts and answers. */
  maxSteps?: number;
  /**
   * Limits on what the run's model steps may spend: a model step does not start once the run's
   * spend reaches one, and the run waits for a person to raise the budget or cancel. A start's
   * own `--max-cost`/`--max-tokens` wins when smaller. Only the root workflow's counts.
   */
  budget?: { maxCostUsd?: number; maxTokens?: number };
  /** `import.meta.url` of the defining file, for diagnostics. */
  source?: string;
  /**
   * When to start this workflow by itself (docs/schedules.md): `cron` (with `timeZone`) or
   * `every`, `overlap`, `catchUp`, `input`, `name`. Only `pi-workflows schedule apply <file>`
   * reads it: loading or running the file never schedules anything.
   */
  schedule?: ScheduleDeclaration;
}

export const DEFINITION_BRAND: unique symbol = Symbol.for("pi-workflows.definition") as never;

/** A validated, frozen workflow definition. */
export type WorkflowDefinition<I = any> = Readonly<WorkflowSpec<I>> & {
  readonly [DEFINITION_BRAND]: true;
};
