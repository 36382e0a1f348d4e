/**
 * When the host dies while a worker runs a shell node, the worker sees its channel close, aborts
 * the node (the shell runner stops the command's own process group) and exits: no command is
 * left running with nobody to commit its outcome.
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { removeTempRoot } from "../support/temp-root.ts";
import { readProcessIdentityNow } from "../../src/os/process-identity.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { queryOne } from "../../src/state/statements.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { loadWorkflow } from "../../src/workflows/sources/load-workflow.ts";
import { normalizeWorkflowInput } from "../../src/workflows/sources/workflow-input.ts";
import { shareWorkerCompileCache } from "../support/worker-compile-cache.ts";

const HOST_ENTRY = join(import.meta.dirname, "fixtures", "host-entry.ts");
const root = realpathSync(mkdtempSync(join(tmpdir(), "piw-shell-")));
let host: ChildProcess | undefined;
let sleeper = 0;

afterAll(async () => {
  host?.kill("SIGKILL");
  if (sleeper && readProcessIdentityNow(sleeper)) process.kill(sleeper, "SIGKILL");
  await removeTempRoot(root);
});

describe("host death during a shell node", () => {
  it("the worker stops the command's process group and exits", async () => {
    const stateDir = join(root, "state");
    shareWorkerCompileCache(stateDir);
    const project = join(root, "project");
    mkdirSync(project, { recursive: true });
    const pidFile = join(root, "sleeper.pid");
    const path = join(project, "sh.workflow.ts");
    writeFileSync(
      path,
      `import { defineWorkflow, shell } from "pi-workflows";
export default defineWorkflow({
  name: "sh",
  startAt: "s",
  nodes: {
    s: shell({
      timeoutMs: 60_000,
      exec: () => ({
        command: "sh",
        args: ["-c", "echo $$ > ${pidFile}; echo started; exec sleep 300"],
      }),
      updates: { parseLine: (line) => ({ type: "note", key: "line", data: { line } }) },
    }),
  },
  edges: [],
});`,
    );
    const loaded = await loadWorkflow(path, { cwd: project });
    const { input, inputHash } = normalizeWorkflowInput(loaded.workflow, {});
    const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds });
    enqueueRun(store, {
      workflowName: "sh",
      workflowRef: path,
      projectPath: project,
      workflowSource: loaded.identity.workflowSource as never,
      definitionDigest: loaded.identity.definitionDigest,
      input,
      inputHash,
      binding: { executionMode: "headless" },
    });
    closeStateStore(store);
    // The host dies when the first update of the running command reaches it.
    host = spawn(process.execPath, [HOST_ENTRY, stateDir], {
      env: {
        ...process.env,
        PI_WORKFLOWS_CRASH_AT: "host.node.update.beforeCommit#1",
        PI_CODING_AGENT_DIR: join(root, "agent"),
      },
      stdio: "ignore",
    });
    const exit = await new Promise<NodeJS.Signals | null>((resolve) =>
      host!.once("exit", (_code, signal) => resolve(signal))
    );
    expect(exit).toBe("SIGKILL");
    expect(existsSync(pidFile)).toBe(true);
    sleeper = Number(readFileSync(pidFile, "utf8").trim());
    expect(await waitUntil(() => readProcessIdentityNow(sleeper) === null, 10_000)).toBe(true);
    // The worker exits too (it may still write its compile cache into the state dir as it goes,
    // so the cleanup must not race it).
    const after = openStateStore({ stateDir, clock: systemClock, ids: randomIds });
    const worker = queryOne<{ pid: number | null }>(
      after,
      "SELECT pid FROM run_workers ORDER BY started_at DESC LIMIT 1",
      {},
    );
    closeStateStore(after);
    expect(worker?.pid).toEqual(expect.any(Number));
    expect(await waitUntil(() => readProcessIdentityNow(worker!.pid!) === null, 10_000)).toBe(true);
  });
});
