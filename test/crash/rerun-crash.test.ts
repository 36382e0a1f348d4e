/**
 * Creating a fork is one transaction: a host SIGKILLed inside it (before the commit) or right
 * after it (receipt committed, answer not sent) leaves exactly one fork once the client's retry
 * reaches the next host, never a half-adopted history; a worker SIGKILLed in the fork's first
 * step is relaunched and the adopted steps still do not run again. Real CLI, host and worker
 * processes; `doctor` clean after each. Also `resume --accept-source` on a run parked
 * `workflowSourceChanged`.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliProcess, type TempHome, tempHome, waitFor } from "../support/host.ts";
import { queryState, waitForState } from "../support/state-db.ts";
import { runCliInProcess } from "../support/cli-in-process.ts";

let home: TempHome;
let project: string;
let counter: string;

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  runCliProcess(args, { ...home.env, ...env }, 120_000);

function workflow(check: string): string {
  return `import { appendFileSync } from "node:fs";
import { action, compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "pipeline",
  startAt: "prepare",
  nodes: {
    prepare: compute({ run: ({ input }) => { appendFileSync(input.counter, "prepare\\n"); return { n: 1 }; } }),
    deploy: action({
      effect: { type: "deploy", key: () => "release-1" },
      run: ({ input }) => { appendFileSync(input.counter, "deploy\\n"); return { id: 7 }; },
    }),
    check: compute({ run: ({ input }) => { appendFileSync(input.counter, "check\\n"); ${check} } }),
  },
  edges: [{ from: "prepare", to: "deploy" }, { from: "deploy", to: "check" }],
});
`;
}

const lines = () => readFileSync(counter, "utf8").split("\n").filter(Boolean);

function forksOf(parent: string): { run_id: string; n: number }[] {
  return queryState(
    home.stateDir,
    "SELECT r.run_id, (SELECT COUNT(*) FROM node_attempts a WHERE a.run_id = r.run_id AND " +
      "a.adopted_from_attempt_id IS NOT NULL) AS n FROM runs r WHERE r.forked_from_run_id = ?",
    parent,
  ) as { run_id: string; n: number }[];
}

async function expectDoctorClean(): Promise<void> {
  const doctor = await cli(["doctor", "--json"]);
  expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
}

let parent: string;

beforeAll(async () => {
  home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "20000" });
  project = join(home.root, "project");
  mkdirSync(project);
  counter = join(home.root, "counter.log");
  writeFileSync(counter, "");
  writeFileSync(join(project, "pipeline.workflow.ts"), workflow(`throw new Error("too strict");`));
  const started = await cli([
    "start",
    join(project, "pipeline.workflow.ts"),
    "--input-json",
    JSON.stringify({ counter }),
    "--wait",
    "--json",
  ]);
  expect(started.code, started.stderr).toBe(6);
  parent = JSON.parse(started.stdout).run.runId;
  writeFileSync(join(project, "pipeline.workflow.ts"), workflow(`return { ok: true };`));
}, 120_000);

afterAll(async () => {
  if (home) {
    await cli(["host", "stop"]);
    await home.cleanup();
  }
});

describe("a crash while creating a fork", () => {
  for (const point of ["host.run.rerun.beforeCommit", "host.command.run.rerun.afterCommit"]) {
    it(`leaves exactly one fork when the host dies at ${point}`, async () => {
      await cli(["host", "stop"]);
      const before = forksOf(parent).length;
      const marker = join(home.root, `crashed-${point}`);
      const env = { PI_WORKFLOWS_CRASH_AT: point, PI_WORKFLOWS_CRASH_ONCE: marker };
      const rerun = await cli(["rerun", parent, "--json"], env);
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(existsSync(marker), `${point} was reached`).toBe(true);
      const forks = forksOf(parent);
      expect(forks).toHaveLength(before + 1);
      // Whole or nothing: every fork adopted both steps.
      expect(forks.map((f) => f.n)).toEqual(forks.map(() => 2));
      const fork = JSON.parse(rerun.stdout).run.runId;
      expect(forks.map((f) => f.run_id)).toContain(fork);
      const done = await cli(["status", fork, "--wait", "--json"]);
      expect(done.code, done.stderr).toBe(0);
      await cli(["host", "stop"]);
      await expectDoctorClean();
    }, 240_000);
  }

  it(
    "relaunches a fork whose worker dies in its first step; adopted steps never run again",
    async () => {
      const marker = join(home.root, "worker-crashed");
      const rerun = await cli([
        "rerun",
        parent,
        "--env",
        "PI_WORKFLOWS_CRASH_AT=worker.node.finished.beforeSend#1",
        "--env",
        `PI_WORKFLOWS_CRASH_ONCE=${marker}`,
        "--wait",
        "--json",
      ]);
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(existsSync(marker), "the worker was killed").toBe(true);
      // prepare and deploy once (the parent), check once per run and twice in the crashed fork.
      expect(lines().filter((l) => l !== "check")).toEqual(["prepare", "deploy"]);
      await expectDoctorClean();
    },
    240_000,
  );
});

describe("resume --accept-source", () => {
  it("re-pins a parked run when its history fits, and says to fork when it does not", async () => {
    const gate = join(home.root, "gate");
    const file = join(project, "parked.workflow.ts");
    const parked = (second: string) =>
      `import { existsSync } from "node:fs";
import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "parked",
  startAt: "first",
  nodes: {
    first: compute({ run: async () => {
      const deadline = Date.now() + 60_000;
      while (!existsSync(${JSON.stringify(gate)}) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      return { a: 1 };
    } }),
    second: ${second},
  },
  edges: [{ from: "first", to: "second" }],
});
`;
    writeFileSync(file, parked(`compute({ run: () => ({ b: 1 }) })`));
    const start = await cli(["start", file, "--json"]);
    expect(start.code, start.stderr).toBe(0);
    const runId = JSON.parse(start.stdout).run.runId;
    // Pause it in its first node (once its attempt is written: a pause that lands before the
    // worker begins leaves no history, and any edit would fit), edit the file: the next launch
    // parks it workflowSourceChanged.
    await waitForState(
      "the first node's attempt",
      () =>
        queryState(
          home.stateDir,
          "SELECT 1 FROM node_attempts WHERE run_id = ? AND node_id = 'first'",
          runId,
        ).length > 0,
      60_000,
    );
    const paused = await cli(["pause", runId]);
    expect(paused.code, paused.stderr).toBe(0);
    writeFileSync(gate, "");
    writeFileSync(file, parked(`compute({ run: () => ({ b: 2 }) })`));
    expect((await cli(["resume", runId])).code).toBe(0);
    let blocked = "";
    await waitFor(
      async () => {
        // A poll: the CLI's entry in this process, no Node start each.
        const status = JSON.parse(
          (await runCliInProcess(["status", runId, "--json"], home.env)).stdout,
        );
        blocked = status.run.blockedReason ?? "";
        return blocked === "workflowSourceChanged";
      },
      () => `the run to park workflowSourceChanged (blocked: '${blocked}')`,
      60_000,
      200,
    );
    expect(blocked).toBe("workflowSourceChanged");
    // Status names the changed file, its digests then and now, and both ways on.
    const status = await cli(["status", runId]);
    expect(status.stdout).toMatch(
      new RegExp(
        `changed since the run started:\n  ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} ` +
          "has changed \\(started with sha256:[0-9a-f]{12}, now sha256:[0-9a-f]{12}\\)\n" +
          "go on with the files as they are now: pi-workflows resume run-[0-9a-f]{8} --accept-source",
      ),
    );

    // A plain resume while the file still differs is refused, naming both ways on: it used to
    // answer "Resumed ... running" and launch a worker that parked the run again at once.
    const plain = await cli(["resume", runId]);
    expect([plain.code, plain.stdout]).toEqual([3, ""]);
    expect(plain.stderr).toContain(`Resume refused: ${file} has changed since run ${runId}`);
    expect(plain.stderr).toContain(`'pi-workflows resume ${runId} --accept-source'`);

    // An edit that changes a node the run ran does not fit: refused, with the fork to make.
    writeFileSync(
      file,
      parked(`compute({ run: () => ({ b: 2 }) })`).replace("first: compute({", "first: action({")
        .replace("import { compute,", "import { action, compute,"),
    );
    const misfit = await cli(["resume", runId, "--accept-source"]);
    expect(misfit.code).toBe(3);
    expect(misfit.stderr).toMatch(/Fork it from an earlier node instead: pi-workflows rerun/);

    writeFileSync(file, parked(`compute({ run: () => ({ b: 2 }) })`));
    const accepted = await cli(["resume", runId, "--accept-source"]);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(accepted.stdout).toMatch(/on the workflow file as it is now/);
    const done = await cli(["status", runId, "--wait", "--json"]);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout).run.output).toEqual({ b: 2 });
    const events = queryState(
      home.stateDir,
      "SELECT payload_json FROM events WHERE run_id = ? AND type = 'run.sourceAccepted'",
      runId,
    ) as { payload_json: string }[];
    expect(events).toHaveLength(1);
    const payload = JSON.parse(events[0].payload_json);
    expect(payload).toMatchObject({ wasBlocked: "workflowSourceChanged" });
    // A callback edit keeps the graph's digest; the source digest (file hashes) changed.
    expect(payload.fromSourceDigest).not.toBe(payload.toSourceDigest);
    expect(payload.toDigest).toMatch(/^sha256:/);
    expect(typeof payload.operator).toBe("string");
    await expectDoctorClean();
  }, 300_000);
});
