/**
 * The agent group node: several agents in one node, each a model step of its own (in a headless
 * run, its own supervised `pi --mode rpc` child), at most `maxConcurrency` at a time. A member's
 * submission goes through tolerant JSON and its own `validate`; a member that fails (no
 * submission, Pi exited, ...) is recorded, not thrown, and the node fails only when fewer than
 * `minSucceeded` members succeed. Every settled member advances one progress update.
 */
import { type MemberUsage, type StepUsage, sumMembers } from "../protocol/step-usage.ts";
import type { SubmissionVerdict } from "../protocol/submissions.ts";
import type { AcceptResult, AgentStepExecutor } from "./agent-executor.ts";
import { normalizeAgentOutput } from "./agent-output.ts";
import { NODE_ID_PATTERN } from "./definition-schema.ts";
import { errorMessage, NodeFailure } from "./errors.ts";
import { toJson } from "./json-value.ts";
import type {
  AgentGroupMember,
  AgentGroupMemberResult,
  AgentGroupNode,
  NodeContext,
  WorkflowUpdate,
} from "./types.ts";
import { PROGRESS_SCHEMA } from "./updates.ts";

export const AGENT_GROUP_LIMITS = { members: 16, concurrency: 8, defaultConcurrency: 4 } as const;

export interface AgentGroupOutput {
  agents: AgentGroupMemberResult[];
  succeeded: number;
  failed: number;
}

export interface AgentGroupServices {
  agent: AgentStepExecutor;
  runId: string;
  workflowName: string;
  nodeId: string;
  publish(update: WorkflowUpdate): void;
  /** The group's usage so far: every member's as it goes, and their sum. */
  reportUsage?(usage: StepUsage, durable: boolean): void;
  /** Counts each verdict on a member's submission (the group's attempt holds them all). */
  reportSubmission?(verdict: SubmissionVerdict): Promise<void>;
}

export async function runAgentGroup(
  n: AgentGroupNode,
  ctx: NodeContext,
  svc: AgentGroupServices,
): Promise<AgentGroupOutput> {
  const members = checkMembers(await n.agents(ctx));
  const minSucceeded = Math.min(n.minSucceeded ?? 1, members.length);
  const limit = Math.min(n.maxConcurrency ?? AGENT_GROUP_LIMITS.defaultConcurrency, members.length);
  const results: AgentGroupMemberResult[] = new Array(members.length);
  let settled = 0;
  const progress = () => {
    try {
      svc.publish({
        type: "progress",
        key: "agents",
        data: {
          schema: PROGRESS_SCHEMA,
          completed: settled,
          total: members.length,
          unit: "agents",
          label: n.statusDetail ?? "agents",
        },
      });
    } catch {
      // A rate-limited progress update never fails the group.
    }
  };
  progress();
  // Members' usage in member order, whatever order they end in.
  const used = new Map<string, MemberUsage>();
  const memberUsage = (id: string) => (usage: StepUsage, durable: boolean) => {
    const { members: _nested, ...own } = usage;
    used.set(id, { id, ...own });
    const ordered = members.flatMap((m) => used.get(m.id) ?? []);
    svc.reportUsage?.(sumMembers(ordered), durable);
  };
  let next = 0;
  const lane = async () => {
    while (next < members.length && !ctx.signal.aborted) {
      const index = next++;
      results[index] = await runMember(members[index], ctx, svc, n.tools, memberUsage);
      settled++;
      progress();
    }
  };
  await Promise.all(Array.from({ length: limit }, lane));
  if (ctx.signal.aborted) throw ctx.signal.reason;
  const succeeded = results.filter((r) => r.outcome === "ok").length;
  if (succeeded < minSucceeded) {
    const first = results.find((r) => r.outcome === "failed");
    const why = first && first.outcome === "failed"
      ? `; first failure, agent "${first.id}": ${first.error.message}`
      : "";
    throw new NodeFailure(
      "agentGroupFailed",
      `Agent group "${svc.nodeId}": ${succeeded} of ${members.length} agents succeeded, ` +
        `${minSucceeded} needed${why}`,
    );
  }
  return { agents: results, succeeded, failed: results.length - succeeded };
}

async function runMember(
  member: AgentGroupMember,
  ctx: NodeContext,
  svc: AgentGroupServices,
  tools: readonly string[] | undefined,
  memberUsage: (id: string) => (usage: StepUsage, durable: boolean) => void,
): Promise<AgentGroupMemberResult> {
  const accept = async (raw: unknown): Promise<AcceptResult> => {
    try {
      const output = normalizeAgentOutput(raw);
      const replaced = member.validate ? await member.validate(output) : undefined;
      return {
        ok: true,
        output: replaced === undefined ? output : toJson(replaced, "validated output"),
      };
    } catch (error) {
      return { ok: false, message: `Output rejected: ${errorMessage(error)}` };
    }
  };
  try {
    const output = await svc.agent.runStep({
      kind: "agent",
      runId: svc.runId,
      workflowName: svc.workflowName,
      nodeId: `${svc.nodeId}.${member.id}`,
      attemptId: `${ctx.state.attemptId}.${member.id}`,
      prompt: member.prompt,
      expectedOutput: member.expectedOutput ?? null,
      statusDetail: member.statusDetail ?? null,
      ...(tools ? { tools } : {}),
      groupMember: { nodeId: svc.nodeId, memberId: member.id },
      signal: ctx.signal,
      // A member's updates carry its id in the key, so parallel members never collide.
      publishUpdate: (update) =>
        svc.publish({ ...update, key: update.key ? `${member.id}.${update.key}` : member.id }),
      accept,
      reportUsage: memberUsage(member.id),
      ...(svc.reportSubmission ? { reportSubmission: svc.reportSubmission } : {}),
    });
    return { id: member.id, outcome: "ok", output: toJson(output, "agent output") };
  } catch (error) {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    const code = error instanceof NodeFailure ? error.code : "agentFailed";
    return {
      id: member.id,
      outcome: "failed",
      error: { code, message: (errorMessage(error) || "The agent failed").slice(0, 2000) },
    };
  }
}

function checkMembers(value: unknown): AgentGroupMember[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw new NodeFailure("invalidAgentGroup", "agents() must return a non-empty array");
  }
  if (value.length > AGENT_GROUP_LIMITS.members) {
    throw new NodeFailure(
      "invalidAgentGroup",
      `agents() returned ${value.length} agents; at most ${AGENT_GROUP_LIMITS.members} run in one group`,
    );
  }
  const seen = new Set<string>();
  for (const [i, m] of value.entries()) {
    const member = m as Partial<AgentGroupMember> | null;
    if (typeof member?.id !== "string" || !NODE_ID_PATTERN.test(member.id)) {
      throw new NodeFailure(
        "invalidAgentGroup",
        `Agent ${i} needs an id matching ${NODE_ID_PATTERN} (it names the agent in the output)`,
      );
    }
    if (seen.has(member.id)) {
      throw new NodeFailure("invalidAgentGroup", `Agent id "${member.id}" appears twice`);
    }
    seen.add(member.id);
    if (typeof member.prompt !== "string" || member.prompt.trim() === "") {
      throw new NodeFailure("invalidAgentGroup", `Agent "${member.id}" needs a prompt (a string)`);
    }
    if (member.validate !== undefined && typeof member.validate !== "function") {
      throw new NodeFailure(
        "invalidAgentGroup",
        `Agent "${member.id}": validate must be a function`,
      );
    }
  }
  return value as AgentGroupMember[];
}
