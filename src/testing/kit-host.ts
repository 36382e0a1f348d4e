/**
 * The host a test runs against: the real host (src/host/host-main.ts) in the test's own process,
 * over a fresh state directory in a temp dir, serving its real socket and spawning real worker
 * processes of this package's CLI. In-process so the test can own its clock: the host reads the
 * kit's virtual clock directly, and the kit moves it to the host's next deadline when the run
 * waits on one. Workers stay separate processes, so a crash test can SIGKILL them for real.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  baseRunEnvironment,
  connectHost,
  type HostConnection,
  type RunEnvironment,
} from "../client/mod.ts";
import type { DeadlineTimer } from "../host/deadline-timer.ts";
import { runHost } from "../host/host-main.ts";
import { selfCommand } from "../os/self-launch.ts";
import { randomIds, systemClock } from "../base/clock.ts";
import { readRun } from "../state/queries.ts";
import { closeStateStore, openStateStore, type StateStore } from "../state/store.ts";
import { VirtualClock } from "./virtual-clock.ts";

export interface KitHost {
  /** The temp dir holding the state directory, the agent dir and the kit's files. */
  root: string;
  stateDir: string;
  connection: HostConnection;
  /** Null with `clock: "system"`. */
  clock: VirtualClock | null;
  deadlines: DeadlineTimer;
  /** The run environment runs start with: the allowlisted base of this process's, agent dir. */
  runEnvironment: RunEnvironment;
  /**
   * Environment for the children of every run working in `projectDir` (crash points, scripted
   * results). Runs are told apart by project directory, so several can run at once.
   */
  setRunEnv(projectDir: string, env: NodeJS.ProcessEnv): void;
  /** The host's last log lines, for a failure message. */
  log(): string;
  close(): Promise<void>;
}

const MAX_INT = "2147483647";
const LOG_LINES = 200;

export async function startKitHost(options: { virtualClock: boolean }): Promise<KitHost> {
  // Short: the socket path inside must fit the platform's limit (~104 bytes on macOS).
  const root = realpathSync(mkdtempSync(join(tmpdir(), "piw-kit-")));
  const stateDir = join(root, "s");
  mkdirSync(join(root, "agent"), { recursive: true });
  const clock = options.virtualClock ? new VirtualClock(join(root, "clock")) : null;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PI_WORKFLOWS_STATE_DIR: stateDir,
    PI_CODING_AGENT_DIR: join(root, "agent"),
    PI_WORKFLOWS_HOST_IDLE_MS: MAX_INT,
    // A virtual jump of days must not outlive the host's own lease: the longest lease, renewed
    // before every command (renewal interval just below it).
    ...(clock
      ? { PI_WORKFLOWS_HOST_CLAIM_TTL_MS: MAX_INT, PI_WORKFLOWS_HOST_RENEW_MS: "2147483646" }
      : {}),
  };
  const cache = sharedCompileCache();
  const baseChildEnv: NodeJS.ProcessEnv = {
    PI_CODING_AGENT_DIR: join(root, "agent"),
    ...(cache ? { NODE_COMPILE_CACHE: cache } : {}),
    ...(clock ? { PI_WORKFLOWS_CLOCK_FILE: clock.file } : {}),
  };
  const runEnvs = new Map<string, NodeJS.ProcessEnv>();
  // The host asks for a child's environment as it spawns it, in this process: the run's
  // project directory is read from the state file (read-only) to find that run's extras.
  let reader: StateStore | null = null;
  const childEnv = (runId: string | null): NodeJS.ProcessEnv => {
    if (runId === null || runEnvs.size === 0) return baseChildEnv;
    reader ??= openStateStore({ stateDir, clock: systemClock, ids: randomIds, readOnly: true });
    const project = readRun(reader, runId)?.projectPath;
    return { ...baseChildEnv, ...(project === undefined ? {} : runEnvs.get(project)) };
  };
  const lines: string[] = [];
  let ready!: (value: { socketPath: string; deadlines: DeadlineTimer }) => void;
  const started = new Promise<{ socketPath: string; deadlines: DeadlineTimer }>((resolve) =>
    ready = resolve
  );
  const stopped = runHost({
    env,
    ...(clock ? { clock } : {}),
    writeLog: (line) => {
      lines.push(line);
      if (lines.length > LOG_LINES) lines.shift();
    },
    supervision: {
      workerCommand: (args) => selfCommand(args, { entry: kitCliEntry() }),
      childEnv,
      // The crash runs repeat the normal run's start (crash-boundaries.ts): one resolver child
      // per project directory and source, not one per run.
      reuseResolutions: true,
    },
    onReady: (host) => ready({ socketPath: host.socketPath, deadlines: host.deadlines }),
  });
  let host: { socketPath: string; deadlines: DeadlineTimer };
  try {
    host = await Promise.race([started, stopped.then(() => Promise.reject(new Error("stopped")))]);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw new Error(`testWorkflow: the host did not start: ${(error as Error).message}`);
  }
  const connection = await connectHost(host.socketPath, {
    clientId: "pi-workflows-testing",
    requestTimeoutMs: 60_000,
  });
  let closing: Promise<void> | null = null;
  return {
    root,
    stateDir,
    connection,
    clock,
    deadlines: host.deadlines,
    runEnvironment: {
      ...baseRunEnvironment(process.env),
      PI_CODING_AGENT_DIR: join(root, "agent"),
    },
    setRunEnv(projectDir, env) {
      runEnvs.set(projectDir, env);
    },
    log: () => lines.join(""),
    close() {
      closing ??= (async () => {
        await connection.request("host.stop", {}).catch(() => {});
        connection.close();
        await stopped.catch(() => {});
        if (reader) closeStateStore(reader);
        rmSync(root, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}

/**
 * One Node compile cache for the workers of every kit host of this user: each test has a fresh
 * state directory, whose own cache would start cold every time (the host keeps it there). Null
 * when the directory is not this user's own (someone else created it first).
 */
function sharedCompileCache(): string | null {
  const uid = process.getuid?.() ?? null;
  const dir = join(tmpdir(), `pi-workflows-testing-cache-${uid ?? "user"}`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const stat = statSync(dir);
    return uid === null || (stat.uid === uid && (stat.mode & 0o077) === 0) ? dir : null;
  } catch {
    return null;
  }
}

/**
 * The CLI entry workers start from: `src/cli/main.ts` beside this source file, or the npm
 * bundle `pi-workflows.mjs` beside the kit's own bundle (`dist/testing.mjs`). Inside the single
 * executable `selfCommand` ignores it and starts the executable itself.
 */
function kitCliEntry(): string {
  const here = fileURLToPath(import.meta.url);
  if (/[\\/]src[\\/]testing[\\/][^\\/]+\.ts$/.test(here)) {
    return join(dirname(here), "..", "cli", "main.ts");
  }
  return join(dirname(here), "pi-workflows.mjs");
}
