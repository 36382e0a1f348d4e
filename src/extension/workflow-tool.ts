/**
 * The model-facing `workflow` tool. `submit` goes to the host as `interaction.submit` with the
 * tool-call id as idempotency key and waits (bounded) for the validation verdict, so the model
 * reads the acceptance or the actionable rejection in the same turn. `start` is deferred: it is
 * queued now and started after the current turn settles. A protected human decision is never
 * answered by the tool.
 */
import { HostCommandError } from "../client/command-receipt.ts";
import { errorLine } from "./error-line.ts";
import type { QuietSubmit } from "./handoff-quiet.ts";
import { WORKFLOW_TOOL_NAME } from "./message-events.ts";
import type { PiContext, PiTool, PiToolResult } from "./pi-api.ts";
import { parseToolCall, TOOL_PARAMETERS, type ToolCall } from "./tool-input.ts";
import {
  answerRun,
  controlRun,
  listPage,
  NO_SESSION_TO_RUN_IN,
  resolveRunId,
  statusText,
} from "./workflow-actions.ts";
import type { ClaimedInteraction, SubmitPresentation } from "./session-ops.ts";
import type { WorkflowSession } from "./workflow-session.ts";

/** How long one submit call waits for the validation verdict in all. */
export const SUBMIT_VERDICT_TIMEOUT_MS = 60_000;
/**
 * After an acceptance, how long the host may hold the answer for the run's next step of this
 * session (it answers as soon as the run goes elsewhere; a prepared run process commits the
 * next request within milliseconds, a fresh one within two process starts).
 */
const NEXT_STEP_WAIT_MS = 2_000;
/** How long the host holds one submit request for the verdict. */
const SUBMIT_WAIT_MS = 10_000;

const DESCRIPTION = "Run and drive pi-workflows workflows. When a workflow step message shows a " +
  "step contract, do the step and call this tool with exactly the submit arguments it shows, " +
  "your result in output (update reports progress). Other actions: list workflows, start one " +
  "(it starts after your turn), status/pause/resume/cancel a run, answer a checkpoint.";

export function workflowTool(session: () => WorkflowSession | null): PiTool {
  return {
    name: WORKFLOW_TOOL_NAME,
    label: "Workflow",
    description: DESCRIPTION,
    promptSnippet: "workflow: submit workflow step results and run pi-workflows workflows",
    parameters: TOOL_PARAMETERS,
    async execute(toolCallId, params, signal, _onUpdate, ctx) {
      const parsed = parseToolCall(params);
      if (!parsed.ok) return failure(parsed.error);
      const current = session();
      if (!current) return failure("Workflows are not available: this Pi session has not started");
      current.touch(ctx);
      try {
        return await act(current, parsed.call, toolCallId, signal, ctx);
      } catch (error) {
        return failure(modelError(error));
      }
    },
  };
}

async function act(
  session: WorkflowSession,
  call: ToolCall,
  toolCallId: string,
  signal: AbortSignal | undefined,
  ctx: PiContext,
): Promise<PiToolResult> {
  const requestId = `tool-${toolCallId}`.slice(0, 200);
  switch (call.action) {
    case "list":
      return success(listPage(ctx.cwd, call.offset ?? 0));
    case "start": {
      if (!ctx.hasUI) return failure(`Not started: ${NO_SESSION_TO_RUN_IN(call.workflow)}`);
      // The deferred start would hit the session reservation later: say so now.
      await session.runs.refresh().catch(() => {});
      const active = session.runs.activeRunId;
      if (active) {
        return failure(`This session already runs workflow run ${active}; only one at a time`);
      }
      if (session.queuedLaunches.length > 0) {
        return failure(`A workflow start is already queued: ${session.queuedLaunches[0].workflow}`);
      }
      session.defer({ key: requestId, workflow: call.workflow, input: call.input ?? {} });
      return success(
        `Queued workflow ${call.workflow}: it starts when this turn ends, and its steps will ` +
          "arrive in this session. End your turn now.",
      );
    }
    case "status":
      return success(await statusText(session, call.runId));
    case "pause":
    case "resume":
      return success(await controlRun(session, call.action, call.runId, requestId));
    case "cancel": {
      // Marked before the cancel commits: the host's push may close the step before this call
      // has its answer.
      session.link();
      const undo = session.presenter.noteClosingHere(resolveRunId(session, call.runId));
      try {
        return success(await controlRun(session, call.action, call.runId, requestId));
      } catch (error) {
        undo();
        throw error;
      }
    }
    case "answer":
      return success(
        await answerRun(session, {
          runId: call.runId,
          answer: call.input,
          fromModel: true,
          requestId,
        }),
      );
    case "update":
      return await update(session, call, toolCallId);
    case "submit":
      return await submit(session, call, toolCallId, signal);
  }
}

async function pending(session: WorkflowSession) {
  session.link();
  if (!session.presenter.current) await session.presenter.refresh();
  const current = session.presenter.current;
  if (!current) throw new Error("No workflow step is waiting for a submission in this session");
  return current;
}

async function update(
  session: WorkflowSession,
  call: Extract<ToolCall, { action: "update" }>,
  toolCallId: string,
): Promise<PiToolResult> {
  const current = await pending(session);
  const used = session.stepUsage(current.interactionId);
  const receipt = await session.ops.update(current, call, toolCallId, used);
  return success(receipt.message ?? `Update recorded for step ${JSON.stringify(call.step)}.`);
}

async function submit(
  session: WorkflowSession,
  call: Extract<ToolCall, { action: "submit" }>,
  toolCallId: string,
  signal: AbortSignal | undefined,
): Promise<PiToolResult> {
  const current = await pending(session);
  // The step's presentation is recorded before its submission (a submission accepted first
  // would settle the request and leave the host without the entry that showed it): one not
  // recorded yet rides in the submission, which the host records first in the same commit.
  const presentation = session.presenter.carryPresentation(current.interactionId);
  const done = session.presenter.noteSubmitting(current.interactionId);
  const quiet = session.handoff.enter();
  let answered = false;
  try {
    const result = await awaitVerdict(
      session,
      current,
      call,
      toolCallId,
      signal,
      presentation,
      quiet,
    );
    answered = true;
    return result;
  } finally {
    if (presentation) session.presenter.presentationCarried(current.interactionId, answered);
    quiet.leave();
    done();
  }
}

async function awaitVerdict(
  session: WorkflowSession,
  current: ClaimedInteraction,
  call: Extract<ToolCall, { action: "submit" }>,
  toolCallId: string,
  signal: AbortSignal | undefined,
  presentation: SubmitPresentation | undefined,
  quiet: QuietSubmit,
): Promise<PiToolResult> {
  const deadline = Date.now() + SUBMIT_VERDICT_TIMEOUT_MS;
  for (;;) {
    const waitMs = Math.max(0, Math.min(SUBMIT_WAIT_MS, deadline - Date.now()));
    // The whole sum each time (the host sets it): Pi recorded the call that submits before
    // running this tool.
    const used = session.stepUsage(current.interactionId);
    const receipt = await session.ops.submit(
      current,
      call,
      toolCallId,
      waitMs,
      NEXT_STEP_WAIT_MS,
      used,
      presentation,
    );
    if (receipt.status === "accepted") {
      session.presenter.noteAccepted(current.interactionId);
      // The next step goes out before this call returns: Pi delivers it right after the tool
      // result, in the same agent run (no turn ending "accepted" first).
      // The progress display follows the host's push of the same commits (session.wait).
      if (receipt.next) {
        quiet.nextStepPresented();
        await session.presenter.presentClaimed(receipt.next, receipt.cursor).catch(() => {});
      } else {
        quiet.noNextStep();
        void session.sync();
      }
      return success(
        receipt.message ??
          `Output accepted for step ${JSON.stringify(call.step)}. End your turn now.`,
      );
    }
    if (receipt.status === "rejected") {
      return failure(receipt.message ?? receipt.error?.message ?? "The output was rejected");
    }
    if (signal?.aborted || Date.now() >= deadline) {
      return failure(
        "The submission is still being validated. Call submit again with the same step, " +
          "attempt and output to wait for its verdict (a different output is refused until " +
          "that verdict is in).",
      );
    }
  }
}

/** The host's model-facing message as is; anything else as one line. */
function modelError(error: unknown): string {
  if (error instanceof HostCommandError) return error.message.replace(/^Host answered \w+: /, "");
  return errorLine(error);
}

function success(text: string): PiToolResult {
  return { content: [{ type: "text", text }], details: {} };
}

function failure(text: string): PiToolResult {
  return { content: [{ type: "text", text }], details: {}, isError: true };
}
