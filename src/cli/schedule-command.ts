/**
 * `pi-workflows schedule add|apply|list|show|pause|resume|remove` (docs/schedules.md): requests to
 * the host (started on demand). `add` and `apply` send what a headless `start` sends (the run
 * environment, the Pi found in this environment with its model arguments, provider keys for the
 * host's memory) plus the timing; a cron without `--tz` follows this machine's zone.
 */
import { receiptOf } from "../client/command-receipt.ts";
import type { HostConnection } from "../client/host-connection.ts";
import { clientStateDir } from "../client/socket-path.ts";
import { credentialVariables, providerCredentials } from "../base/credential-names.ts";
import type { PiLaunch } from "../protocol/pi-launch.ts";
import { localTimeZone } from "../base/schedule-timing.ts";
import {
  formatScheduleChange,
  formatScheduleDetail,
  formatScheduleList,
} from "../render/schedule-text.ts";
import { discoverPi } from "../worker/pi-command.ts";
import { EXIT } from "./exit-codes.ts";
import { type CliIo, printJson } from "./output.ts";
import type { ScheduleCommand } from "./parse-schedule.ts";
import { projectDir } from "./project-dir.ts";
import { namedSecretsLine, readStartInput, startEnvironment } from "./start-input.ts";
import { withHost } from "./with-host.ts";

export async function runScheduleCommand(
  command: ScheduleCommand,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  let pi: PiLaunch | null = null;
  if (command.action === "add" || command.action === "apply") {
    const found = discoverPi({ env, stateDir: clientStateDir(env), cwd: process.cwd() });
    if (found.ok) pi = { command: found.pi.command, args: command.piArgs };
    else if (found.code === "invalidConfig" || command.piArgs.length > 0) {
      io.err(found.message);
      return EXIT.piUnavailable;
    }
  }
  if (command.action === "add" && command.cron !== null && command.timeZone === null) {
    // Node resolves no zone for a TZ it does not know and runs in UTC: a cron meant for local
    // time would silently fire at UTC times.
    if (env.TZ && !Intl.DateTimeFormat().resolvedOptions().timeZone) {
      io.err(
        `TZ=${env.TZ} is not a time zone this machine knows, so the cron has no local zone: ` +
          "pass --tz <zone> (an IANA name such as Europe/Berlin or UTC) or set TZ to one",
      );
      return EXIT.usage;
    }
  }
  const input = command.action === "add" ? await readStartInput(command.input) : null;
  return await withHost(env, io, (connection) => execute(connection, command, env, pi, input, io));
}

async function execute(
  connection: HostConnection,
  command: ScheduleCommand,
  env: NodeJS.ProcessEnv,
  pi: PiLaunch | null,
  input: unknown,
  io: CliIo,
): Promise<number> {
  const now = Date.now();
  const print = (json: unknown, text: string) => {
    if (command.json) printJson(io, json);
    else io.out(text);
    return EXIT.ok;
  };
  switch (command.action) {
    case "add": {
      const receipt = receiptOf(
        "schedule.add",
        await connection.request("schedule.add", {
          payload: {
            name: command.name,
            workflow: command.workflow,
            cwd: projectDir(command.cwd),
            ...(command.cron !== null
              ? { cron: command.cron, timeZone: command.timeZone ?? localTimeZone() }
              : { every: command.every! }),
            ...(command.overlap !== null ? { overlap: command.overlap } : {}),
            ...(command.catchUp !== null ? { catchUp: command.catchUp } : {}),
            input: input as never,
            env: startEnvironment(command.env, env),
            credentials: providerCredentials(env),
            ...(pi ? { pi } : {}),
            ...(command.replace ? { replace: true } : {}),
          },
        }),
      );
      const verb = receipt.created ? "Added" : receipt.changed ? "Replaced" : "Unchanged";
      const secrets = namedSecretsLine(command.env, receipt.schedule.name);
      if (secrets) io.err(secrets);
      return print(receipt, formatScheduleChange(verb, receipt.schedule, now));
    }
    case "apply": {
      const receipt = receiptOf(
        "schedule.apply",
        await connection.request("schedule.apply", {
          payload: {
            workflow: command.workflow,
            cwd: projectDir(command.cwd),
            env: startEnvironment(command.env, env),
            credentials: providerCredentials(env),
            defaultTimeZone: localTimeZone(),
            ...(pi ? { pi } : {}),
          },
        }),
      );
      const verb = receipt.created ? "Applied" : receipt.changed ? "Updated" : "Unchanged";
      const secrets = namedSecretsLine(command.env, receipt.schedule.name);
      if (secrets) io.err(secrets);
      return print(receipt, formatScheduleChange(verb, receipt.schedule, now));
    }
    case "list": {
      const receipt = receiptOf(
        "schedule.list",
        await connection.request("schedule.list", { payload: {} }),
      );
      return print(receipt, formatScheduleList(receipt, now));
    }
    case "show": {
      const receipt = receiptOf(
        "schedule.show",
        await connection.request("schedule.show", {
          payload: {
            name: command.name,
            ...(command.firings !== null ? { firings: command.firings } : {}),
          },
        }),
      );
      return print(receipt, formatScheduleDetail(receipt, now));
    }
    case "pause":
    case "resume": {
      const operation = command.action === "pause" ? "schedule.pause" : "schedule.resume";
      const receipt = receiptOf(
        operation,
        await connection.request(operation, {
          payload: command.action === "resume"
            ? { name: command.name, credentials: credentialVariables(env) }
            : { name: command.name },
        }),
      );
      const verb = command.action === "pause" ? "Paused" : "Resumed";
      return print(receipt, formatScheduleChange(verb, receipt.schedule, now));
    }
    case "remove": {
      const receipt = receiptOf(
        "schedule.remove",
        await connection.request("schedule.remove", { payload: { name: command.name } }),
      );
      return print(receipt, `Removed schedule ${receipt.name} (its runs are kept)`);
    }
  }
}
