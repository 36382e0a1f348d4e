/**
 * One run of a test scenario on the kit's host: start it as an interactive run of its own
 * session, drive it (drive-run.ts) and read what it did (run-result.ts).
 */
import { mkdirSync, realpathSync } from "node:fs";
import { receiptOf } from "../client/command-receipt.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { checkScriptedNodes, type HumanAnswer, type StepAnswer } from "./answers.ts";
import { driveRun } from "./drive-run.ts";
import type { KitHost } from "./kit-host.ts";
import { readRunRecord, type WorkflowTestResult } from "./run-result.ts";

/** One scripted scenario, run the same way by the normal run and every crash run. */
export interface Scenario {
  ref: string;
  input: JsonValue;
  answers: Readonly<Record<string, StepAnswer>>;
  human: Readonly<Record<string, HumanAnswer>>;
  virtualClock: boolean;
  timeoutMs: number;
}

/** One kit host and what every run of the scenario on it shares. */
export interface KitRun {
  host: KitHost;
  scenario: Scenario;
  /** The scripted results file workers read (answers for action and shell nodes). */
  script: string;
}

let sessions = 0;

/**
 * One run of the scenario on the kit's host, working in `projectDir`; `childEnv` reaches every
 * child of this run (crash points). Each run has a session of its own, as if from its own Pi.
 */
export async function runScenario(
  kit: KitRun,
  projectDir: string,
  childEnv: NodeJS.ProcessEnv,
): Promise<WorkflowTestResult> {
  const { host, scenario } = kit;
  host.setRunEnv(projectDir, { ...childEnv, PI_WORKFLOWS_SCRIPTED_RESULTS: kit.script });
  const sessionId = `pi-workflows-testing-${++sessions}`;
  const skippedBefore = host.clock?.advancedMs ?? 0;
  const started = receiptOf(
    "run.start",
    await host.connection.request("run.start", {
      payload: {
        workflow: scenario.ref,
        input: scenario.input,
        cwd: projectDir,
        executionMode: "interactive",
        originSessionId: sessionId,
        env: host.runEnvironment,
      },
    }),
  );
  const runId = started.run.runId;
  // Only now: the compiled definition comes from the host's resolver, which no request runs
  // without starting the run; loading the workflow here as well would be a second load.
  const { definition } = receiptOf(
    "run.status",
    await host.connection.request("run.status", {
      runId,
      payload: { includeDefinition: true, attemptLimit: 1 },
    }),
  );
  if (definition) checkScriptedNodes(definition, scenario.answers, scenario.human);
  const status = await driveRun(host, runId, {
    sessionId,
    answers: scenario.answers,
    human: scenario.human,
    timeoutMs: scenario.timeoutMs,
  });
  const record = await readRunRecord(host.connection, host.stateDir, runId);
  return {
    ...record,
    state: record.status.run.state,
    output: record.status.run.output,
    error: record.status.run.error ?? undefined,
    waiting: status.run.state === "waiting" ? record.status.waiting : undefined,
    skippedMs: (host.clock?.advancedMs ?? 0) - skippedBefore,
    crash: undefined,
  };
}

/** `dir`, created empty; its canonical path. */
export function emptyDir(dir: string): string {
  mkdirSync(dir, { recursive: true });
  return realpathSync(dir);
}
