/**
 * A headless test environment: the fake model, a Pi sandbox (temp HOME and agent dir), and the
 * `pi-workflows` CLI from source whose host starts on demand in that environment, with
 * `PI_WORKFLOWS_PI` naming the real Pi from devDependencies. The model's moves come from a
 * `decide` function each test sets. Every process is found through the sandbox's agent dir in
 * its environment and stopped by PID at the end.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { openStateStore, type StateStore } from "../../src/state/store.ts";
import { runCliInProcess } from "./cli-in-process.ts";
import { runCliProcess } from "./host.ts";
import { type FakeModel, type FakeReply, startFakeModel } from "./fake-model.ts";
import type { FakeModelRequest } from "./fake-model.ts";
import { createPiSandbox, PI_CLI, type PiSandbox } from "./pi-sandbox.ts";
import { stepResponder, type SubmitContract, submitContractIn } from "./step-responder.ts";
import { processesWithEnv, type ProcessInfo } from "../smoke/processes.ts";

export type Decide = (
  request: FakeModelRequest,
  contract: SubmitContract | undefined,
) => FakeReply | undefined | Promise<FakeReply | undefined>;

export interface HeadlessEnv {
  model: FakeModel;
  sandbox: PiSandbox;
  env: Record<string, string>;
  /** The model's next moves; undefined falls back to "submit {ok: true}". */
  decide: Decide;
  /** Runs the CLI (from source) in the sandbox. */
  cli(
    args: string[],
    timeoutMs?: number,
  ): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** `cli` with `--json`, parsed. */
  cliJson(args: string[], timeoutMs?: number): Promise<any>;
  /**
   * The CLI's entry (`runCli`, what the program calls) in the test's own process: the same code
   * as `cli` without a Node start (about 0.5 s of CPU each). For reads and commands to the host
   * that runs now; a start, a host command, a case about the process itself or a privacy check
   * keeps `cli` (a CLI printing its own environment would show the test's here, not the sandbox's).
   */
  cliHere(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** `cliHere` with `--json`, parsed. */
  cliHereJson(args: string[]): Promise<any>;
  /** Writes a workflow into the sandbox project; returns its path. */
  writeWorkflow(name: string, source: string): string;
  /** Live `pi --mode rpc` processes of this sandbox. */
  piProcesses(): ProcessInfo[];
  /** Every live process of this sandbox. */
  processes(): ProcessInfo[];
  /** The state database, read-only (close it). */
  openState(): StateStore;
  close(): Promise<void>;
}

export interface HeadlessEnvOptions {
  /** Extra environment (host and supervision tunables, planted keys). */
  env?: Record<string, string>;
  /** Replaces the agent dir's models.json (the fake model's base URL is passed in). */
  modelsJson?: (baseUrl: string) => unknown;
  /** See PiSandboxOptions.ownCompileCache. */
  ownCompileCache?: boolean;
}

export async function createHeadlessEnv(options: HeadlessEnvOptions = {}): Promise<HeadlessEnv> {
  const holder: { decide: Decide } = { decide: () => undefined };
  const fallback = stepResponder();
  const model = await startFakeModel({
    lifetimeMs: 10 * 60_000,
    script: async (request) => {
      const contract = submitContractIn(request.lastUserText);
      return (await holder.decide(request, contract)) ?? fallback(request);
    },
  });
  const sandbox = createPiSandbox({
    modelBaseUrl: model.baseUrl,
    ownCompileCache: options.ownCompileCache,
    env: {
      PI_WORKFLOWS_PI: PI_CLI,
      PI_WORKFLOWS_HOST_IDLE_MS: "120000",
      PI_WORKFLOWS_KILL_GRACE_MS: "1000",
      ...options.env,
    },
  });
  if (options.modelsJson) {
    writeFileSync(
      join(sandbox.agentDir, "models.json"),
      JSON.stringify(options.modelsJson(model.baseUrl)),
    );
  }
  const env = sandbox.env;
  const marker = `PI_CODING_AGENT_DIR=${sandbox.agentDir}`;
  const cli = (args: string[], timeoutMs = 90_000) => runCliProcess(args, env, timeoutMs);
  const processes = () => processesWithEnv(marker);
  const result: HeadlessEnv = {
    model,
    sandbox,
    env,
    get decide() {
      return holder.decide;
    },
    set decide(decide: Decide) {
      holder.decide = decide;
    },
    cli,
    cliJson: async (args, timeoutMs) => parsed(args, await cli([...args, "--json"], timeoutMs)),
    cliHere: (args) => runCliInProcess(args, env),
    cliHereJson: async (args) => parsed(args, await runCliInProcess([...args, "--json"], env)),
    writeWorkflow(name, source) {
      const path = join(sandbox.project, name);
      writeFileSync(path, source);
      return path;
    },
    // Pi renames its process to `pi` once it runs.
    piProcesses: () =>
      processes().filter((p) =>
        p.argv.join(" ") === "pi" || (p.argv.includes(PI_CLI) && p.argv.includes("rpc"))
      ),
    processes,
    openState: () =>
      openStateStore({
        stateDir: sandbox.stateDir,
        clock: systemClock,
        ids: randomIds,
        readOnly: true,
      }),
    async close() {
      await cli(["host", "stop"], 20_000).catch(() => {});
      await sandbox.cleanup();
      await model.close();
    },
  };
  return result;
}

function parsed(args: string[], run: { code: number | null; stdout: string; stderr: string }) {
  try {
    return JSON.parse(run.stdout);
  } catch {
    throw new Error(`pi-workflows ${args.join(" ")}: exit ${run.code}, ${run.stderr}`);
  }
}

/** One agent step `work` (then a compute echoing its output), optionally opting out of reruns. */
export function oneAgentStep(name: string, extra = ""): string {
  return `import { agent, compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: ${JSON.stringify(name)},
  startAt: "work",
  nodes: {
    work: agent({ prompt: "Do the work for ${name}.", expectedOutput: '{"done": true}'${extra} }),
    finish: compute({ run: ({ outputs }) => ({ result: outputs.work }) }),
  },
  edges: [{ from: "work", to: "finish" }],
});
`;
}

/** A promise with its resolver, for a model reply held until the test releases it. */
export function gate<T = void>(): { promise: Promise<T>; open(value: T): void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
