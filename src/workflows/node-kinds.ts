/** What each node kind does when its attempt runs. */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { StepUsage } from "../protocol/step-usage.ts";
import type { SubmissionVerdict } from "../protocol/submissions.ts";
import { decisionSuffix } from "./accept-output.ts";
import type { AcceptResult, AgentStepExecutor } from "./agent-executor.ts";
import type { CompiledNode } from "./compile.ts";
import { NodeFailure } from "./errors.ts";
import type { NodeResult } from "./node-result.ts";
import { checkPresentation, checkTimeout, validateHumanResponse } from "./human-decision.ts";
import { toJson } from "./json-value.ts";
import { takesLineObject, updateStreams } from "./shell-line-form.ts";
import { type OutputSink, type ProcessGroupHooks, runShell } from "./shell-runner.ts";
import { withStepOutput } from "./step-output-scope.ts";
import type { HumanDecisionRequest } from "./human-decision-types.ts";
import type {
  HumanDecisionNode,
  NodeContext,
  ShellCommand,
  ShellNode,
  TextSpec,
  UpdateReceipt,
  WorkflowUpdate,
} from "./types.ts";
import { type EffectPort, runManagedEffect } from "./managed-effect.ts";
import { runAgentGroup } from "./agent-group.ts";

/** Notify messages and prompts travel in one protocol field of this size. */
export const MAX_MESSAGE_CHARS = 65_536;

export interface KindServices {
  publish(update: WorkflowUpdate): void;
  agent: AgentStepExecutor;
  /** Runs agent group members; default `agent` (an interactive run's group needs headless Pi). */
  groupAgent?: AgentStepExecutor;
  runId: string;
  workflowName: string;
  accept(raw: unknown): Promise<AcceptResult>;
  /** Present when the worker can reserve and settle managed effects. */
  effects?: EffectPort;
  /** Present when a shell command's process group is to be attached to host supervision. */
  processGroups?: ProcessGroupHooks;
  /** Receives a shell node's output as it comes (the step's output files). */
  output?: OutputSink;
  /** Receives a model step's whole usage so far (an agent group's: every member's, summed). */
  reportUsage?(usage: StepUsage, durable: boolean): void;
  /** Counts each verdict on a model step's submission (AgentStepRequest.reportSubmission). */
  reportSubmission?(verdict: SubmissionVerdict): Promise<void>;
}

export async function runNodeKind(
  node: CompiledNode,
  ctx: NodeContext,
  svc: KindServices,
): Promise<NodeResult> {
  const n = node.node;
  switch (n.kind) {
    case "compute":
      return ok(toJson(await n.run(ctx), "compute output"));
    case "action": {
      // Commands the action runs itself (runCommandBatch) print into the step's output files.
      const apply = async () =>
        toJson(
          await withStepOutput(
            svc.output,
            () => n.run({ ...ctx, publishUpdate: withReceipt(svc.publish) }),
          ),
          "action output",
        );
      if (!n.effect || !svc.effects) return ok(await apply());
      const request = { nodeId: node.id };
      return ok(await runManagedEffect(n.effect, "action", ctx, svc.effects, request, apply));
    }
    case "shell": {
      const cmd = await n.exec(ctx);
      const apply = () => runShellNode(n, cmd, ctx, svc);
      if (!n.effect || !svc.effects) return ok(await apply());
      const request = toJson({ nodeId: node.id, command: cmd }, "shell command");
      return ok(await runManagedEffect(n.effect, "shell", ctx, svc.effects, request, apply));
    }
    case "checkpoint": {
      const request = n.run
        ? await n.run(ctx)
        : { summary: n.summary === undefined ? null : await text(n.summary, ctx, "summary") };
      return {
        outcome: "waiting",
        kind: "checkpoint",
        request: toJson(request, "checkpoint request"),
        ...(n.answerSchema ? { answerSchema: n.answerSchema as unknown as JsonValue } : {}),
      };
    }
    case "humanDecision": {
      const req = checkDecisionRequest(await n.request(ctx));
      try {
        checkPresentation(req.presentation);
      } catch (error) {
        throw new NodeFailure("invalidRequest", (error as Error).message);
      }
      let onTimeout = typeof n.onTimeout === "function" ? await n.onTimeout(ctx) : n.onTimeout;
      if (onTimeout !== undefined && onTimeout !== null) {
        const problem = checkTimeout(n.choices, onTimeout);
        if (problem) throw new NodeFailure("invalidRequest", `Human decision ${problem}`);
        // Saved already normalized: the host applies it at the deadline without workflow code.
        const checked = validateHumanResponse(n.choices, onTimeout.response);
        if (checked.ok) onTimeout = { afterMs: onTimeout.afterMs, response: checked.response };
      }
      const request = {
        schema: "pi-workflows.human-decision-request.v1",
        audience: await audienceOf(n, ctx),
        title: req.title,
        subject: toJson(req.subject, "decision subject"),
        presentation: req.presentation,
        revision: req.revision ?? 1,
        choices: n.choices,
        onTimeout: onTimeout ?? null,
      };
      return {
        outcome: "waiting",
        kind: "humanDecision",
        request: toJson(request, "decision request"),
      };
    }
    case "notify": {
      const message = await text(n.message, ctx, "notify message");
      if (message.length > MAX_MESSAGE_CHARS) {
        throw new NodeFailure("messageTooLong", "The notify message is over 65536 characters");
      }
      const notification = { kind: n.notifyKind, message };
      return { outcome: "ok", output: notification, notification };
    }
    case "agentGroup": {
      const output = await runAgentGroup(n, ctx, {
        agent: svc.groupAgent ?? svc.agent,
        runId: svc.runId,
        workflowName: svc.workflowName,
        nodeId: node.id,
        publish: svc.publish,
        ...(svc.reportUsage ? { reportUsage: svc.reportUsage } : {}),
        ...(svc.reportSubmission ? { reportSubmission: svc.reportSubmission } : {}),
      });
      return ok(toJson(output, "agent group output"));
    }
    case "agent":
    case "decision":
    case "assistantMessage": {
      const step = await agentStepText(node, ctx);
      const output = await svc.agent.runStep({
        ...step,
        runId: svc.runId,
        workflowName: svc.workflowName,
        nodeId: node.id,
        attemptId: ctx.state.attemptId,
        statusDetail: n.statusDetail ?? null,
        ...(n.kind === "agent" && n.tools ? { tools: n.tools } : {}),
        signal: ctx.signal,
        publishUpdate: svc.publish,
        accept: svc.accept,
        ...(svc.reportUsage ? { reportUsage: svc.reportUsage } : {}),
        ...(svc.reportSubmission ? { reportSubmission: svc.reportSubmission } : {}),
      });
      return ok(toJson(output, "agent output"));
    }
  }
}

/** Largest decision subject (as JSON text): it travels with the request in one message. */
const MAX_SUBJECT_CHARS = 256 * 1024;

/**
 * The fields every decision request needs. The subject is what the decision is about: any JSON
 * value (a string, a plan object, ...). `expiresAt` of earlier versions is refused by name:
 * this host enforces deadlines itself (`onTimeout` for a default answer, `timeoutMs` for none).
 */
function checkDecisionRequest(req: unknown): HumanDecisionRequest {
  if (typeof req !== "object" || req === null || Array.isArray(req)) {
    throw new NodeFailure("invalidRequest", "Human decision request must be an object");
  }
  const r = req as Partial<HumanDecisionRequest> & { expiresAt?: unknown };
  if (r.expiresAt !== undefined) {
    throw new NodeFailure(
      "invalidRequest",
      "Human decision request field expiresAt is not supported: set onTimeout: {afterMs, " +
        "response} on the humanDecision for a default answer at a deadline, or timeoutMs to " +
        "end the wait without one",
    );
  }
  if (typeof r.title !== "string" || r.title.trim() === "") {
    throw new NodeFailure("invalidRequest", "Human decision request needs a title (a string)");
  }
  if (r.subject === undefined) {
    throw new NodeFailure(
      "invalidRequest",
      "Human decision request needs a subject (any JSON value: what the decision is about)",
    );
  }
  // Named before the presentation's own checks, which would only say its schema is wrong.
  if (r.presentation === undefined || r.presentation === null) {
    throw new NodeFailure(
      "invalidRequest",
      'Human decision request needs a presentation ({schema: "pi-workflows.decision-presentation.v1", summary, blocks}: what the person reads before choosing)',
    );
  }
  let subjectChars: number;
  try {
    subjectChars = JSON.stringify(r.subject)?.length ?? 0;
  } catch {
    subjectChars = 0;
  }
  if (subjectChars > MAX_SUBJECT_CHARS) {
    throw new NodeFailure(
      "invalidRequest",
      `Human decision subject is over ${MAX_SUBJECT_CHARS} characters of JSON: keep it short and put detail in the presentation`,
    );
  }
  return r as HumanDecisionRequest;
}

/** The prompt and output hint of a model step, as the executor (or an interaction) shows them. */
export async function agentStepText(
  node: CompiledNode,
  ctx: NodeContext,
): Promise<{ kind: "agent" | "assistantMessage"; prompt: string; expectedOutput: string | null }> {
  const n = node.node;
  if (n.kind === "decision") {
    return {
      kind: "agent",
      prompt: (await text(n.question, ctx, "question")) + decisionSuffix(n.choices, n.field),
      expectedOutput: `{"${n.field}": ${n.choices.map((c) => JSON.stringify(c)).join(" | ")}}`,
    };
  }
  if (n.kind === "agent") {
    return {
      kind: "agent",
      prompt: await text(n.prompt, ctx, "prompt"),
      expectedOutput: n.expectedOutput ?? null,
    };
  }
  if (n.kind === "assistantMessage") {
    return {
      kind: "assistantMessage",
      prompt: await text(n.prompt, ctx, "prompt"),
      expectedOutput: null,
    };
  }
  throw new NodeFailure("notAnAgentStep", `Node "${node.id}" is not a model step`);
}

async function runShellNode(
  n: ShellNode,
  cmd: ShellCommand,
  ctx: NodeContext,
  svc: KindServices,
): Promise<JsonValue> {
  const updates = n.updates;
  const lineObject = updates !== undefined && takesLineObject(updates.parseLine);
  const streams = updates ? updateStreams(updates) : [];
  const lineArgument = lineObject
    ? (text: string, stream: "stdout" | "stderr") => ({ stream, text })
    : (text: string) => text;
  const lineContext = { ...ctx, publishUpdate: svc.publish };
  // An async parser's updates are published in line order, before the node's result.
  let pending: Promise<void> = Promise.resolve();
  const publishAll = (out: unknown) => {
    for (const u of out == null ? [] : Array.isArray(out) ? out : [out]) svc.publish(u);
  };
  const result = await runShell(cmd, {
    signal: ctx.signal,
    processGroups: svc.processGroups,
    ...(svc.output ? { onOutput: svc.output } : {}),
    onLine: updates
      ? (line, stream) => {
        if (!streams.includes(stream)) return;
        try {
          const out = updates.parseLine(lineArgument(line, stream) as never, {
            ...lineContext,
            stream,
          });
          if (typeof (out as { then?: unknown } | null)?.then === "function") {
            pending = pending.then(() => out).then(publishAll).catch(() => {});
          } else publishAll(out);
        } catch {
          // A bad or rate-limited line update never fails the command.
        }
      }
      : undefined,
  });
  await pending;
  const output = n.parse ? await n.parse(result, ctx) : result;
  return toJson(output, "shell output");
}

/** A human decision's audience: its name, or what its audience function returns. */
async function audienceOf(n: HumanDecisionNode, ctx: NodeContext): Promise<string> {
  if (typeof n.audience === "string") return n.audience;
  const value = await n.audience(ctx);
  if (typeof value !== "string" || value.length === 0 || value.length > 256) {
    throw new NodeFailure(
      "invalidRequest",
      "Human decision audience function must return a name (1-256 characters)",
    );
  }
  return value;
}

/**
 * `publishUpdate` for a function action: it records the update (throwing when it is refused) and
 * resolves to a receipt, as 0.12's did; the host numbers updates, so the receipt has no `seq`.
 */
function withReceipt(
  publish: (update: WorkflowUpdate) => void,
): (update: WorkflowUpdate) => Promise<UpdateReceipt> {
  return (update) => {
    publish(update);
    return Promise.resolve({ type: update.type, key: update.key, at: new Date().toISOString() });
  };
}

function ok(output: JsonValue): NodeResult {
  return { outcome: "ok", output };
}

async function text(spec: TextSpec, ctx: NodeContext, what: string): Promise<string> {
  const value = typeof spec === "function" ? await spec(ctx) : spec;
  if (typeof value !== "string") {
    throw new NodeFailure("invalidText", `The ${what} must be a string`);
  }
  return value;
}
