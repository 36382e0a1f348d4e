/**
 * A private Pi installation for one test: a temp HOME and agent dir (`PI_CODING_AGENT_DIR`) with
 * `models.json` naming the fake model server and a quiet `settings.json`, an explicit environment
 * (no inherited provider keys, `PI_OFFLINE=1`), and packages installed with `pi install <dir>` the
 * way users install them. Nothing outside the temp root is read or written. `cleanup()` stops
 * every process still carrying this sandbox's agent dir in its environment (Pi, a host it started,
 * workers), by PID, then removes the root.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { processesWithEnv, type ProcessInfo } from "../smoke/processes.ts";
import { removeTempRoot } from "./temp-root.ts";
import { runWhileBusy, waitUntil } from "./wait.ts";
import { shareWorkerCompileCache } from "./worker-compile-cache.ts";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The real Pi CLI from devDependencies (`dist/bundle/cli.js`, the package's `bin`). */
export const PI_CLI = (() => {
  const dir = join(REPO_ROOT, "node_modules", "@earendil-works", "pi-coding-agent");
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  return join(dir, (manifest as { bin: { pi: string } }).bin.pi);
})();

export const FAKE_PROVIDER = "fake";
export const FAKE_MODEL_ID = "fake-model";

export interface PiSandbox {
  root: string;
  home: string;
  agentDir: string;
  /** The workflow state dir Pi's extension and any host it starts use. */
  stateDir: string;
  /** A project directory (the cwd Pi runs in). */
  project: string;
  /** The full environment Pi and the CLI get (nothing inherited beyond PATH). */
  env: Record<string, string>;
  /**
   * `pi install <source>` into this agent dir; rejects with Pi's output on failure, or once it has
   * used no CPU for 30 s or run `capMs` (60 s unless given).
   */
  install(source: string, capMs?: number): Promise<string>;
  /** The agent dir's settings.json as it is now. */
  settings(): Record<string, unknown>;
  /** Live processes whose environment names this sandbox (Pi, the host, workers, children). */
  processes(): ProcessInfo[];
  /** PIDs of the sandbox's `pi-workflows host run` processes. */
  hostPids(): number[];
  /** SIGKILLs every process whose environment names this sandbox, by PID. */
  killStragglers(): Promise<number[]>;
  cleanup(): Promise<void>;
}

export interface PiSandboxOptions {
  /** Base URL of the fake model server (`FakeModel.baseUrl`). */
  modelBaseUrl: string;
  /** Extra settings.json keys. */
  settings?: Record<string, unknown>;
  /** Extra environment variables. */
  env?: Record<string, string>;
  /**
   * A compile cache of the state directory's own, not the shared one (worker-compile-cache.ts):
   * for a test that reads every file under the state directory.
   */
  ownCompileCache?: boolean;
}

/** Node that runs Pi: this process's, which must meet Pi's `engines` (>= 22.19). */
function piNode(): string {
  const [major, minor] = process.versions.node.split(".").map(Number);
  if (major < 22 || (major === 22 && minor < 19)) {
    throw new Error(
      `Pi 1.6.0 needs Node >= 22.19 but the tests run on ${process.version}; run them through npm (npm test / npx vitest), which puts the pinned Node first on PATH`,
    );
  }
  return process.execPath;
}

/**
 * `models.json` naming the fake model server as provider `fake` with model `fake-model`;
 * `provider` replaces or adds provider fields (`apiKey`, `headers`, ...).
 */
export function fakeModels(baseUrl: string, provider: Record<string, unknown> = {}) {
  return {
    providers: {
      [FAKE_PROVIDER]: {
        baseUrl,
        api: "openai-completions",
        apiKey: "fake-key",
        compat: { supportsDeveloperRole: false, supportsStore: false },
        models: [{
          id: FAKE_MODEL_ID,
          reasoning: false,
          input: ["text"],
          contextWindow: 64_000,
          maxTokens: 1024,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        }],
        ...provider,
      },
    },
  };
}

/**
 * A Pi agent dir's `models.json` naming the fake model server (provider `fake`, model
 * `fake-model`) and a quiet `settings.json` that makes it the default (also for the smokes).
 */
export function writeFakeAgentConfig(
  agentDir: string,
  modelBaseUrl: string,
  settings: Record<string, unknown> = {},
): void {
  mkdirSync(agentDir, { recursive: true });
  writeFileSync(join(agentDir, "models.json"), JSON.stringify(fakeModels(modelBaseUrl)));
  writeFileSync(
    join(agentDir, "settings.json"),
    JSON.stringify({
      defaultProvider: FAKE_PROVIDER,
      defaultModel: FAKE_MODEL_ID,
      defaultThinkingLevel: "off",
      enableInstallTelemetry: false,
      quietStartup: true,
      cacheWarming: "off",
      retry: { enabled: false },
      compaction: { enabled: false },
      extensions: [
        "-builtin:mcp",
        "-builtin:llama.cpp",
        "-builtin:codemode",
        "-builtin:tool-search",
      ],
      ...settings,
    }),
  );
}

export function createPiSandbox(options: PiSandboxOptions): PiSandbox {
  // A short root: the host socket lives under it and unix socket paths are limited.
  const root = mkdtempSync(join(tmpdir(), "ppi-"));
  const home = join(root, "home");
  const agentDir = join(root, "agent");
  const stateDir = join(root, "state");
  const project = join(root, "project");
  for (const dir of [home, agentDir, project]) mkdirSync(dir, { recursive: true });
  if (!options.ownCompileCache) shareWorkerCompileCache(stateDir);

  writeFakeAgentConfig(agentDir, options.modelBaseUrl, options.settings);

  const node = piNode();
  const env: Record<string, string> = {
    PATH: `${dirname(node)}:/usr/bin:/bin`,
    HOME: home,
    PI_CODING_AGENT_DIR: agentDir,
    PI_WORKFLOWS_STATE_DIR: stateDir,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    TMPDIR: tmpdir(),
    LANG: "C.UTF-8",
    // The process backend the test runs under (vitest's ps pass) reaches Pi's host and workers.
    ...(process.env.PI_WORKFLOWS_PROCESS_BACKEND
      ? { PI_WORKFLOWS_PROCESS_BACKEND: process.env.PI_WORKFLOWS_PROCESS_BACKEND }
      : {}),
    ...options.env,
  };
  const marker = `PI_CODING_AGENT_DIR=${agentDir}`;

  const killStragglers = async (): Promise<number[]> => {
    const pids = processesWithEnv(marker).map((info) => info.pid);
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    // SIGKILL is not instant: wait (bounded) until none of them is alive any more.
    if (pids.length > 0) await waitUntil(() => processesWithEnv(marker).length === 0, 5_000);
    return pids;
  };

  return {
    root,
    home,
    agentDir,
    stateDir,
    project,
    env,
    settings: () => JSON.parse(readFileSync(join(agentDir, "settings.json"), "utf8")),
    // Bounded by its progress: 30 s without using CPU is a hang, not a loaded machine.
    install: (source, capMs = 60_000) =>
      runWhileBusy(node, [PI_CLI, "install", source], { cwd: project, env, idleMs: 30_000, capMs })
        .catch((error: Error) => {
          throw new Error(`pi install ${source} failed: ${error.message}`);
        }),
    processes: () => processesWithEnv(marker),
    hostPids: () =>
      processesWithEnv(marker).filter((info) => {
        const at = info.argv.indexOf("host");
        return at !== -1 && info.argv[at + 1] === "run";
      }).map((info) => info.pid),
    killStragglers,
    async cleanup() {
      await killStragglers();
      await removeTempRoot(root);
    },
  };
}
