/** Node builders. Each returns a plain node object; `defineWorkflow` checks the shape. */
import type { AnswerSchema } from "../protocol/answer-schema.ts";
import type {
  ActionContext,
  ActionNode,
  AgentGroupNode,
  AgentNode,
  AssistantMessageNode,
  CheckpointNode,
  CommonNodeOptions,
  ComputeNode,
  ManagedEffect,
  ModelStepOptions,
  NodeContext,
  NotifyNode,
  ShellCommand,
  ShellNode,
  ShellResult,
  ShellUpdates,
  TextSpec,
} from "./types.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";

export function agent<I = any>(
  options: CommonNodeOptions<I> & ModelStepOptions & {
    prompt: TextSpec<I>;
    expectedOutput?: string;
    validate?: (output: JsonValue, ctx: NodeContext<I>) => unknown;
    tools?: string[];
  },
): AgentNode<I> {
  return { ...options, kind: "agent" };
}

/**
 * Several agents in one node, each in its own supervised headless Pi session, bounded by
 * `maxConcurrency`; the output joins their results (`{agents, succeeded, failed}`).
 */
export function agentGroup<I = any>(
  options: Omit<AgentGroupNode<I>, "kind">,
): AgentGroupNode<I> {
  return { ...options, kind: "agentGroup" };
}

/** A visible reply in the origin Pi session (interactive runs only). Output: `{text}`. */
export function assistantMessage<I = any>(
  options: CommonNodeOptions<I> & { prompt: TextSpec<I> },
): AssistantMessageNode<I> {
  return { ...options, kind: "assistantMessage" };
}

/** A pure function of the context; it may run again after a crash. */
export function compute<I = any>(
  options: CommonNodeOptions<I> & { run: (ctx: NodeContext<I>) => unknown },
): ComputeNode<I> {
  return { ...options, kind: "compute" };
}

interface ShellOptions<I> extends CommonNodeOptions<I> {
  exec: (ctx: NodeContext<I>) => ShellCommand | Promise<ShellCommand>;
  parse?: (result: ShellResult, ctx: NodeContext<I>) => unknown;
  updates?: ShellUpdates<I>;
  effect?: ManagedEffect<I>;
}

/** A side-effecting step: a function (`run`) or a command (`exec`, same as `shell`). */
export function action<I = any>(
  options:
    | (CommonNodeOptions<I> & {
      run: (ctx: ActionContext<I>) => unknown;
      effect?: ManagedEffect<I>;
    })
    | ShellOptions<I>,
): ActionNode<I> | ShellNode<I> {
  if ("exec" in options) return shell(options);
  return { ...options, kind: "action" };
}

/** Runs one command without a shell, in its own process group. */
export function shell<I = any>(options: ShellOptions<I>): ShellNode<I> {
  return { ...options, kind: "shell" };
}

/**
 * Parks the run as `waiting` until someone answers; the answer becomes this node's output. With
 * `answerSchema` the host refuses an answer of another shape (naming the field) before it
 * records it.
 */
export function checkpoint<I = any>(
  options: CommonNodeOptions<I> & {
    summary?: TextSpec<I>;
    run?: (ctx: NodeContext<I>) => unknown;
    answerSchema?: AnswerSchema;
  } = {},
): CheckpointNode<I> {
  return { ...options, kind: "checkpoint" };
}

/** A passive message to the origin Pi session (no model turn). */
export function notify<I = any>(
  options: CommonNodeOptions<I> & { message: TextSpec<I>; kind?: "progress" | "final" },
): NotifyNode<I> {
  const { kind, ...rest } = options;
  return { ...rest, kind: "notify", notifyKind: kind ?? "progress" };
}
