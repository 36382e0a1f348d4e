/**
 * What `run.start` and `run.rerun` both do before and after they commit a new run: split what
 * the client sent into the run's recorded environment and its memory-only credentials, have a
 * supervised resolver child check the workflow as it is now (the host never loads workflow
 * code), refuse a headless run its steps could not run in, and once the run is committed hand
 * its credentials to supervision and wake the scheduler.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { splitCredentials } from "../base/credential-names.ts";
import type { RunEnvironment } from "../base/env-names.ts";
import type { ExecutionMode } from "../protocol/execution-mode.ts";
import type { PiLaunch } from "../protocol/pi-launch.ts";
import { baseRunEnvironment } from "../protocol/run-environment.ts";
import type { ResolvedSource } from "./resolved-run.ts";
import type { HostRuntime } from "./host-runtime.ts";

export interface RunLaunchRequest {
  workflow: string;
  input: JsonValue | null;
  /** The project directory, already real. */
  cwd: string;
  /** The run environment the client defined; absent: the host's allowlisted base. */
  env?: RunEnvironment;
  /** Provider credentials the client passed explicitly. */
  credentials?: RunEnvironment;
  executionMode: ExecutionMode;
  /** The Pi a headless run's agent steps would start. */
  pi: PiLaunch | null;
  /** The command as refusals name it: `start "review"`, `rerun run-1`. */
  command: (workflowName: string) => string;
  /** A resolver refusal in the command's words; default: the resolver's message as it is. */
  unresolved?: (message: string) => string;
  /** What to do instead of a headless run of a workflow with an assistant-message step. */
  interactiveHint: string;
}

export type PreparedRunLaunch =
  | {
    ok: true;
    resolved: ResolvedSource;
    /** Recorded with the run for every relaunch. */
    environment: RunEnvironment;
    /** Held in memory only, for the run's Pi children. */
    credentials: RunEnvironment;
    /** Secrets named with `--env`: meant for the run, so its workers and nodes get them too. */
    runSecretNames: string[];
  }
  | { ok: false; code: string; message: string };

export async function prepareRunLaunch(
  rt: HostRuntime,
  launch: RunLaunchRequest,
): Promise<PreparedRunLaunch> {
  // A client that sends no environment gets the allowlisted base of the host's own (never the
  // rest of it); credentials are split off it, and an explicit `--env` wins over a key the
  // client picked up from its environment.
  const split = splitCredentials(launch.env ?? baseRunEnvironment(process.env));
  const credentials = { ...launch.credentials, ...split.credentials };
  const resolved = await rt.supervision.resolve({
    workflow: launch.workflow,
    input: launch.input,
    cwd: launch.cwd,
    env: split.env,
  });
  if (!resolved.ok) {
    const message = launch.unresolved?.(resolved.message) ?? resolved.message;
    return { ok: false, code: resolved.code, message };
  }
  if (launch.executionMode === "headless") {
    const command = launch.command(resolved.workflowName);
    // No origin Pi session to show an assistant message in: refuse now rather than fail at that
    // step after earlier steps ran.
    if (resolved.needsInteractive) {
      return {
        ok: false,
        code: "needsOriginSession",
        message:
          `Cannot ${command} headless: it has an assistant-message step, which needs an origin Pi session (${launch.interactiveHint})`,
      };
    }
    if (resolved.needsAgent && !launch.pi) {
      return {
        ok: false,
        code: "piUnavailable",
        message:
          `Cannot ${command} headless: it has agent steps and no Pi command was found to run them`,
      };
    }
  }
  return {
    ok: true,
    resolved,
    environment: split.env,
    credentials,
    runSecretNames: Object.keys(split.credentials),
  };
}

/** After the run's commit: its credentials to supervision, one log line, the scheduler woken. */
export function runLaunched(
  rt: HostRuntime,
  event: "run.queued" | "run.forked",
  run: { runId: string; revision: number },
  credentials: RunEnvironment,
): void {
  rt.supervision.supplyCredentials(run.runId, credentials);
  rt.log(event, { runId: run.runId, revision: run.revision });
  rt.supervision.wake();
}
