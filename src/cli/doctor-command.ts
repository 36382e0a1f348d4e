/**
 * `pi-workflows doctor`: opens the state database read-only (through the state layer's
 * `runDoctor`) and reports identity, digest, invariants and whether `config.json` in the state
 * directory is valid. Works whether or not a host runs.
 */
import { connectHost } from "../client/host-connection.ts";
import { hostSocketPath } from "../client/socket-path.ts";
import { formatDoctorReport, runDoctor } from "../state/doctor.ts";
import { resolveStateDir } from "../state/store.ts";
import { readUserConfigText } from "../os/user-config-file.ts";
import { parseUserConfig } from "../protocol/user-config.ts";
import { EXIT } from "./exit-codes.ts";
import { type CliIo, printJson } from "./output.ts";
import type { CliCommand } from "./parse-command.ts";

const PROBE_TIMEOUT_MS = 1_000;

export async function runDoctorCommand(
  command: Extract<CliCommand, { kind: "doctor" }>,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const stateDir = resolveStateDir(env);
  const config = parseUserConfig(readUserConfigText(stateDir));
  const report = runDoctor({ stateDir, configProblem: config.ok ? null : config.message });
  // An unexpired lease is not a running host (a killed one leaves its lease behind): ask the socket.
  const answering = report.hostEpoch?.live
    ? await socketAnswers(hostSocketPath(stateDir))
    : undefined;
  if (command.json) printJson(io, { ...report, hostAnswering: answering ?? false });
  else io.out(formatDoctorReport(report, answering));
  return report.ok ? EXIT.ok : EXIT.invariantsViolated;
}

/** Whether a host accepts a connection on its socket within the probe's deadline. */
async function socketAnswers(socketPath: string): Promise<boolean> {
  try {
    (await connectHost(socketPath, { connectTimeoutMs: PROBE_TIMEOUT_MS })).close();
    return true;
  } catch {
    return false;
  }
}
