/**
 * `pi-workflows doctor`: opens the state database read-only (through the state layer's
 * `runDoctor`) and reports identity, digest and invariants. Works whether or not a host runs.
 */
import { formatDoctorReport, runDoctor } from "../state/doctor.ts";
import { resolveStateDir } from "../state/store.ts";
import { EXIT } from "./exit-codes.ts";
import { type CliIo, printJson } from "./output.ts";
import type { CliCommand } from "./parse-command.ts";

export function runDoctorCommand(
  command: Extract<CliCommand, { kind: "doctor" }>,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const report = runDoctor({ stateDir: resolveStateDir(env) });
  if (command.json) printJson(io, report);
  else io.out(formatDoctorReport(report));
  return Promise.resolve(report.ok ? EXIT.ok : EXIT.invariantsViolated);
}
