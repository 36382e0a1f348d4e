/**
 * `rerun` and `retry`: fork a run at a node (`run.rerun`) and print where the fork came from.
 * A retry is printed as the rerun it is (`rerun <run> --from <node> --source current`).
 */
import { receiptOf } from "../client/command-receipt.ts";
import { newClientId } from "../client/client-id.ts";
import { ensureHost } from "../client/ensure-host.ts";
import { createHostClient } from "../client/host-client.ts";
import { clientStateDir } from "../client/socket-path.ts";
import { discoverPi } from "../worker/pi-command.ts";
import { providerCredentials } from "../base/credential-names.ts";
import { EXIT } from "./exit-codes.ts";
import { readStartInput, startEnvironment } from "./start-input.ts";
import { followRun } from "./follow-run.ts";
import { formatRunHeadline } from "./format-run.ts";
import { type CliIo, printJson } from "./output.ts";
import { resolveRunId, shortRunId } from "./run-ids.ts";
import type { RerunCommand } from "./parse-rerun.ts";
import type { RunRerunReceipt } from "../protocol/rerun-operations.ts";
import { forkOriginText, retryMeaning } from "../render/rerun-text.ts";
import { hostRefusalExit } from "./with-host.ts";

export async function runRerunCommand(
  command: RerunCommand,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const input = command.input ? await readStartInput(command.input) : undefined;
  const runEnv = startEnvironment(command.env, env);
  // New model arguments need this shell's Pi; without them the fork keeps the parent's Pi.
  let pi: { command: string; args: string[] } | undefined;
  if (command.piArgs.length > 0) {
    const found = discoverPi({ env, stateDir: clientStateDir(env), cwd: process.cwd() });
    if (!found.ok) {
      io.err(found.message);
      return EXIT.piUnavailable;
    }
    pi = { command: found.pi.command, args: command.piArgs };
  }
  const clientId = newClientId();
  const onWait = (line: string) => io.err(line);
  const connection = createHostClient({ env, clientId, onWait });
  try {
    const runId = await resolveRunId(connection, command.runId);
    const receipt = receiptOf(
      "run.rerun",
      await connection.request("run.rerun", {
        runId,
        payload: {
          ...(command.retry ? { retry: true } : {}),
          ...(command.from !== null ? { from: command.from } : {}),
          ...(command.visit !== null ? { visit: command.visit } : {}),
          ...(command.source !== null ? { source: command.source } : {}),
          ...(input !== undefined ? { input } : {}),
          env: runEnv,
          credentials: providerCredentials(env),
          ...(pi ? { pi } : {}),
        },
      }),
    );
    if (command.json && !command.wait) printJson(io, receipt);
    else if (!command.json) io.out(rerunText(receipt, command.retry, io));
    if (command.wait) {
      const reconnect = () => ensureHost({ env, clientId, onWait });
      // The fork's line above is its head line.
      return await followRun(connection, reconnect, receipt.run, command.json, io, null);
    }
    return EXIT.ok;
  } catch (error) {
    return hostRefusalExit(io, error);
  } finally {
    connection.close();
  }
}

/** What was forked from where, and for a retry the rerun it stands for. */
export function rerunText(receipt: RunRerunReceipt, retry: boolean, io: CliIo): string {
  const { from } = receipt;
  const lines = [];
  // Run ids as every text output shows them (`run-1a2b3c4d`, a prefix every command takes).
  if (retry) {
    lines.push(`retry ${shortRunId(from.runId)} ${retryMeaning(from, "rerun", shortRunId)}`);
  }
  lines.push(
    `Forked ${formatRunHeadline(receipt.run, { style: io.style })}`,
    `  ${forkOriginText(receipt, shortRunId)}`,
  );
  return lines.join("\n");
}
