/**
 * `/workflow`: list, start, status, pause, resume (also `--accept-source`), cancel, answer,
 * rerun and retry (rerun-run.ts), schedule. Results and errors are shown as Pi notices (one line
 * for errors, never a stack); a start or an interactive rerun runs at once and the run's next
 * step arrives in this session through the presenter.
 */
import { CommandArgsError, parseWorkflowArgs } from "./command-args.ts";
import { commandNotice } from "./command-notice.ts";
import { errorLine } from "./error-line.ts";
import type { PiContext } from "./pi-api.ts";
import {
  answerRun,
  controlRun,
  listPage,
  NO_SESSION_TO_RUN_IN,
  statusText,
} from "./workflow-actions.ts";
import type { WorkflowSession } from "./workflow-session.ts";
import { runScheduleArgs } from "./schedule-command.ts";
import { parseRerunArgs } from "./rerun-args.ts";
import { rerunRun } from "./rerun-run.ts";

export async function runWorkflowCommand(
  session: WorkflowSession | null,
  args: string,
  ctx: PiContext,
): Promise<void> {
  const say = commandNotice(ctx);
  try {
    const command = parseWorkflowArgs(args);
    if (command.kind === "list") return say(listPage(ctx.cwd));
    if (!session) throw new Error("Workflows are not available: this Pi session has not started");
    session.touch(ctx);
    switch (command.kind) {
      case "start": {
        if (!ctx.hasUI) throw new Error(NO_SESSION_TO_RUN_IN(command.workflow));
        // The host holds the session reservation (one active run per session) and says so.
        const run = await session.startRun(command.workflow, command.input);
        const title = run.title ? `: ${run.title}` : "";
        return say(`Started workflow ${run.workflowName} (${run.runId})${title}`);
      }
      case "control":
        if (command.verb === "status") return say(await statusText(session, command.runId));
        return say(
          await controlRun(
            session,
            command.verb,
            command.runId,
            undefined,
            command.acceptSource === true,
          ),
        );
      case "rerun": {
        const args = parseRerunArgs(command.verb, command.args);
        return say(await rerunRun(session, args, { canRunHere: ctx.hasUI }));
      }
      case "schedule":
        return say(await runScheduleArgs(session, command.args));
      case "answer":
        return say(
          await answerRun(session, {
            runId: command.runId,
            text: command.text,
            fromModel: false,
          }),
        );
    }
  } catch (error) {
    say(
      error instanceof CommandArgsError ? error.message : `/workflow: ${errorLine(error)}`,
      "error",
    );
  }
}
