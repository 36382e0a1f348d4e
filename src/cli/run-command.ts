/**
 * `start`, `status`, `list`, `pause`, `resume`, `cancel` and `answer`: requests to the host, which is
 * started on demand. The host answers; this file prints and picks the exit code.
 */
import { existsSync } from "node:fs";
import { HostCommandError, receiptOf } from "../client/command-receipt.ts";
import { newClientId } from "../client/client-id.ts";
import { ensureHost } from "../client/ensure-host.ts";
import { createHostClient } from "../client/host-client.ts";
import { clientStateDir } from "../client/socket-path.ts";
import { discoverPi, type PiDiscovery } from "../worker/pi-command.ts";
import type { HostConnection } from "../client/host-connection.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { RunEnvironment } from "../protocol/run-environment.ts";
import { credentialVariables, providerCredentials } from "../base/credential-names.ts";
import { effectResolveCommand } from "./effect-command.ts";
import { operatorName } from "../client/operator-name.ts";
import { EXIT } from "./exit-codes.ts";
import { projectDir } from "./project-dir.ts";
import { answerRun } from "./answer-command.ts";
import { namedSecretsLine, readStartInput, startEnvironment } from "./start-input.ts";
import { followRun } from "./follow-run.ts";
import { readRunList, readStatus } from "./paged-reads.ts";
import { formatInteraction, formatWaiting } from "./format-waiting.ts";
import type { Waiting } from "../protocol/decision-request.ts";
import { formatRun, formatRunHeadline, formatRunList } from "./format-run.ts";
import { formatRunSpend } from "../protocol/budget.ts";
import { type CliIo, printJson } from "./output.ts";
import { readWaitingOf } from "./list-waiting.ts";
import { resolveRunId } from "./run-ids.ts";
import type { CliCommand } from "./parse-command.ts";
import { formatNotifications } from "./format-notifications.ts";

type RunCommand = Extract<
  CliCommand,
  { kind: "start" | "status" | "list" | "control" | "answer" | "effect" | "budget" }
>;

interface StartRequest {
  cwd: string;
  input: JsonValue;
  env: RunEnvironment;
}

const DEFAULT_LIST_LIMIT = 50;

const PAST_TENSE = { pause: "Paused", resume: "Resumed", cancel: "Cancelled" } as const;

export async function runRunCommand(
  command: RunCommand,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  // Everything a start needs from here is read before the host is contacted.
  const start = command.kind === "start"
    ? {
      cwd: projectDir(command.cwd),
      input: await readStartInput(command.input),
      env: startEnvironment(command.env, env),
    }
    : null;
  // Pi is looked for in the user's own environment, before anything is queued.
  const pi = command.kind === "start"
    ? discoverPi({ env, stateDir: clientStateDir(env), cwd: process.cwd() })
    : null;
  if (
    pi && !pi.ok &&
    (pi.code === "invalidConfig" ||
      command.kind === "start" && (command.piArgs.length > 0 || command.projectContext))
  ) {
    io.err(pi.message);
    return EXIT.piUnavailable;
  }
  // One client id per invocation: a reconnect (start --wait across a host restart) keeps it.
  // The client retries every request with its request id while no host answers (a takeover).
  const clientId = newClientId();
  const onWait = (line: string) => io.err(line);
  const connection = createHostClient({ env, clientId, onWait });
  try {
    // Provider keys of this shell go to the host's memory for the run's Pi (never stored); a
    // resume offers every credential-looking variable, the host keeps the run's own.
    const credentials = command.kind === "control" && command.action === "resume"
      ? credentialVariables(env)
      : providerCredentials(env);
    const reconnect = () => ensureHost({ env, clientId, onWait });
    return await execute(connection, reconnect, command, start, pi, credentials, io);
  } catch (error) {
    if (error instanceof HostCommandError) {
      // The host found agent steps that need the Pi we could not offer: say why it is missing.
      if (error.code === "piUnavailable" && pi && !pi.ok) {
        io.err(pi.message);
        return EXIT.piUnavailable;
      }
      io.err(error.message);
      return error.outcome === "unavailable" ? EXIT.hostUnavailable : EXIT.refused;
    }
    throw error;
  } finally {
    connection.close();
  }
}

async function execute(
  connection: HostConnection,
  reconnect: () => Promise<HostConnection>,
  typed: RunCommand,
  start: StartRequest | null,
  pi: PiDiscovery | null,
  credentials: RunEnvironment,
  io: CliIo,
): Promise<number> {
  // A run id may be typed as any unique prefix; from here on it is the full id.
  const command = "runId" in typed
    ? { ...typed, runId: await resolveRunId(connection, typed.runId) }
    : typed;
  const style = io.style;
  switch (command.kind) {
    case "start": {
      const { run } = receiptOf(
        "run.start",
        await connection.request("run.start", {
          payload: {
            workflow: command.workflow,
            input: start!.input,
            cwd: start!.cwd,
            env: start!.env,
            credentials,
            executionMode: "headless",
            ...(pi?.ok
              ? {
                pi: {
                  command: pi.pi.command,
                  args: command.piArgs,
                  ...(command.projectContext ? { context: "project" as const } : {}),
                },
              }
              : {}),
            ...(Object.keys(command.budget).length > 0 ? { budget: command.budget } : {}),
          },
        }),
      );
      const secrets = namedSecretsLine(command.env);
      if (secrets) io.err(secrets);
      if (command.wait) return await followRun(connection, reconnect, run, command.json, io);
      if (command.json) printJson(io, { run });
      else io.out(`Started ${formatRunHeadline(run, { style })}`);
      return EXIT.ok;
    }
    case "status": {
      if (command.wait) {
        const { run } = receiptOf(
          "run.status",
          await connection.request("run.status", { runId: command.runId, payload: {} }),
        );
        return await followRun(connection, reconnect, run, command.json, io, "Following");
      }
      const receipt = await readStatus(connection, command.runId, command.attempts, {
        includeUpdates: true,
        includeNotifications: true,
      });
      if (command.json) printJson(io, receipt);
      else {
        const waiting = receipt.waiting as Waiting | undefined;
        io.out(formatRun(receipt.run, receipt.attempts, {
          style,
          waiting,
          ambiguous: receipt.ambiguousEffects,
          sourceChanges: receipt.sourceChanges,
          updates: receipt.updates,
          attemptCount: receipt.attemptCount,
          // The socket is local: the session file is on this machine.
          ...(receipt.pi
            ? { pi: { ...receipt.pi, sessionStarted: existsSync(receipt.pi.sessionFile) } }
            : {}),
        }));
        if (receipt.notifications?.length) io.out(formatNotifications(receipt.notifications));
        if (waiting) io.out(formatWaiting(receipt.run.runId, waiting, Date.now(), style));
        if (receipt.interaction) io.out(formatInteraction(receipt.interaction));
      }
      return EXIT.ok;
    }
    case "answer":
      return await answerRun(connection, command, io);
    case "list": {
      // Without --limit: 50 runs, or with --all every run.
      const limit = command.limit ?? (command.all ? null : DEFAULT_LIST_LIMIT);
      const list = await readRunList(connection, command.all, limit);
      if (command.json) printJson(io, list);
      else {
        const waiting = await readWaitingOf(connection, list.runs);
        io.out(formatRunList(list.runs, { style, all: command.all, total: list.total, waiting }));
      }
      return EXIT.ok;
    }
    case "effect":
      return await effectResolveCommand(connection, command, io);
    case "budget": {
      const { run } = receiptOf(
        "run.budget",
        await connection.request("run.budget", {
          runId: command.runId,
          payload: {
            ...(command.raiseCostUsd !== null ? { raiseCostUsd: command.raiseCostUsd } : {}),
            ...(command.raiseTokens !== null ? { raiseTokens: command.raiseTokens } : {}),
          },
        }),
      );
      if (command.json) printJson(io, { run });
      else {
        io.out(`Raised the budget of ${formatRunHeadline(run, { style })}`);
        if (run.spend) io.out(`  spend: ${formatRunSpend(run.spend, run.budget)}`);
      }
      return EXIT.ok;
    }
    case "control": {
      const operation = `run.${command.action}` as const;
      const { run } = receiptOf(
        operation,
        await connection.request(operation, {
          runId: command.runId,
          // A resume re-supplies the keys a restarted host no longer holds.
          ...(command.action === "resume"
            ? {
              payload: {
                credentials,
                ...(command.acceptSource ? { acceptSource: true, operator: operatorName() } : {}),
              },
            }
            : {}),
        }),
      );
      if (command.json) printJson(io, { run });
      else {
        const accepted = command.acceptSource ? " on the workflow file as it is now" : "";
        io.out(`${PAST_TENSE[command.action]} ${formatRunHeadline(run, { style })}${accepted}`);
      }
      return EXIT.ok;
    }
  }
}
