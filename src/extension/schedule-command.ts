/**
 * `/workflow schedule ...` (docs/schedules.md): the host's `schedule.*` operations from a Pi
 * session, for the session's project (`ctx.cwd`). A schedule starts headless runs, which Pi does
 * not drive: a workflow with agent steps needs the Pi command the CLI's `schedule add` records.
 */
import { localTimeZone } from "../base/schedule-timing.ts";
import { runEnvironment } from "../protocol/run-environment.ts";
import {
  formatScheduleChange,
  formatScheduleDetail,
  formatScheduleList,
} from "../render/schedule-text.ts";
import { parseScheduleArgs } from "./schedule-args.ts";
import type { WorkflowSession } from "./workflow-session.ts";

/** Runs one schedule command; returns the text to show. */
export async function runScheduleArgs(session: WorkflowSession, raw: string): Promise<string> {
  const command = parseScheduleArgs(raw);
  const client = session.client;
  const now = Date.now();
  switch (command.action) {
    case "list":
      return formatScheduleList(await client.call("schedule.list", { payload: {} }), now);
    case "show":
      return formatScheduleDetail(
        await client.call("schedule.show", { payload: { name: command.name } }),
        now,
      );
    case "pause":
    case "resume": {
      const receipt = await client.call(`schedule.${command.action}`, {
        payload: { name: command.name },
      });
      const verb = command.action === "pause" ? "Paused" : "Resumed";
      return formatScheduleChange(verb, receipt.schedule, now);
    }
    case "remove": {
      const receipt = await client.call("schedule.remove", { payload: { name: command.name } });
      return `Removed schedule ${receipt.name} (its runs are kept)`;
    }
    case "apply": {
      const receipt = await client.call("schedule.apply", {
        payload: {
          workflow: command.workflow,
          cwd: session.cwd,
          env: runEnvironment(process.env, {}),
          defaultTimeZone: localTimeZone(),
        },
      });
      const verb = receipt.created ? "Applied" : receipt.changed ? "Updated" : "Unchanged";
      return formatScheduleChange(verb, receipt.schedule, now);
    }
    case "add": {
      const { action: _action, replace, ...fields } = command;
      const receipt = await client.call("schedule.add", {
        payload: {
          ...fields,
          ...(fields.cron !== undefined && fields.timeZone === undefined
            ? { timeZone: localTimeZone() }
            : {}),
          cwd: session.cwd,
          // Its runs get the Pi process's environment (the allowlisted base), as a start would.
          env: runEnvironment(process.env, {}),
          ...(replace ? { replace: true } : {}),
        },
      });
      const verb = receipt.created ? "Added" : receipt.changed ? "Replaced" : "Unchanged";
      return formatScheduleChange(verb, receipt.schedule, now);
    }
  }
}
