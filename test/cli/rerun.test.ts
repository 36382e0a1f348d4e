/**
 * Fix a step and go on, end to end: real CLI processes, a real host and workers, real workflow
 * files edited between the failure and the rerun, an external counter file for a managed effect.
 * `doctor` is clean after each.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliInProcess } from "../support/cli-in-process.ts";
import { runCliProcess, type TempHome, tempHome, waitFor } from "../support/host.ts";
import { queryState } from "../support/state-db.ts";

let home: TempHome;
let project: string;

const cli = (args: string[], timeoutMs = 90_000) => runCliProcess(args, home.env, timeoutMs);
/**
 * Reads and operator commands to the host a CLI process just used (status, list, cancel, effect
 * resolve) through the CLI's entry in this process: the same code without a Node start; starts,
 * reruns and retries stay processes.
 */
const cliHere = (args: string[]) => runCliInProcess(args, home.env);

/** The pipeline: prepare, a deploy with a managed effect, a check that is too strict. */
function pipeline(check: string, deployKind: "action" | "compute" = "action"): string {
  const deploy = deployKind === "action"
    ? `action({
      effect: { type: "deploy", key: () => "release-1" },
      run: ({ input }) => { appendFileSync(input.counter, "deploy\\n"); return { id: 7 }; },
    })`
    : `compute({ run: () => ({ id: 7 }) })`;
  return `import { appendFileSync } from "node:fs";
import { action, compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "pipeline",
  startAt: "prepare",
  nodes: {
    prepare: compute({ run: ({ input }) => { appendFileSync(input.counter, "prepare\\n"); return { n: 1 }; } }),
    deploy: ${deploy},
    check: compute({ run: ({ outputs }) => { ${check} } }),
  },
  edges: [{ from: "prepare", to: "deploy" }, { from: "deploy", to: "check" }],
});
`;
}

/** A loop (`work` twice) and then an included workflow whose `polish` fails until fixed. */
function loopWithInclude(polish: string): { parent: string; child: string } {
  return {
    child: `import { appendFileSync } from "node:fs";
import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "inner",
  startAt: "draft",
  nodes: {
    draft: compute({ run: ({ input }) => { appendFileSync(input.counter, "draft\\n"); return { text: "d" }; } }),
    polish: compute({ run: () => { ${polish} } }),
  },
  edges: [{ from: "draft", to: "polish" }],
  exits: { done: { from: "polish" } },
});
`,
    parent: `import { appendFileSync } from "node:fs";
import { compute, defineWorkflow, includeWorkflow } from "@osolmaz/pi-workflows";
import inner from "./inner.workflow.ts";
export default defineWorkflow({
  name: "looping",
  startAt: "work",
  nodes: {
    work: compute({ run: ({ input, state }) => {
      appendFileSync(input.counter, "work" + state.visit + "\\n");
      return { again: state.visit < 2 };
    } }),
  },
  includes: { write: includeWorkflow(inner, { input: ({ input }) => input }) },
  edges: [
    { from: "work", switch: { on: "$.again", cases: { true: "work", false: "write" } } },
  ],
});
`,
  };
}

function lines(file: string): string[] {
  return readFileSync(file, "utf8").split("\n").filter(Boolean);
}

async function startFailed(workflow: string, counter: string): Promise<string> {
  writeFileSync(counter, "");
  const started = await cli([
    "start",
    join(project, workflow),
    "--input-json",
    JSON.stringify({ counter }),
    "--wait",
    "--json",
  ]);
  expect(started.code, started.stderr).toBe(6);
  const run = JSON.parse(started.stdout).run;
  expect(run.state).toBe("failed");
  return run.runId as string;
}

/** `doctor` reads the state file only (it never starts a host): run in this process (runCli). */
async function expectDoctorClean(): Promise<void> {
  const doctor = await runCliInProcess(["doctor", "--json"], home.env);
  expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
}

beforeAll(() => {
  home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "20000" });
  project = join(home.root, "project");
  mkdirSync(project);
});

afterAll(async () => {
  if (home) {
    await cli(["host", "stop"]);
    await home.cleanup();
  }
});

describe("rerun after fixing the workflow file", () => {
  it(
    "adopts the steps before the failed node (the deploy applies once in total) and finishes",
    async () => {
      const counter = join(home.root, "pipeline.log");
      writeFileSync(
        join(project, "pipeline.workflow.ts"),
        pipeline(`throw new Error("too strict");`),
      );
      const parent = await startFailed("pipeline.workflow.ts", counter);
      expect(lines(counter)).toEqual(["prepare", "deploy"]);

      // An edit that changes an adopted node's kind does not fit: refused, naming it.
      writeFileSync(
        join(project, "pipeline.workflow.ts"),
        pipeline(`return { ok: true };`, "compute"),
      );
      const misfit = await cli(["rerun", parent]);
      expect(misfit.code).toBe(3);
      expect(misfit.stderr).toMatch(
        /node "deploy" was an action node and is now a compute node.*--from deploy/,
      );

      // The fix: the check no longer throws.
      writeFileSync(
        join(project, "pipeline.workflow.ts"),
        pipeline(`return { ok: outputs.deploy.id };`),
      );
      // The recorded source is the old file: refused, nothing forked.
      const recorded = await cli(["rerun", parent, "--source", "recorded"]);
      expect(recorded.code).toBe(3);
      expect(recorded.stderr).toMatch(/workflow file changed since it started/);

      const rerun = await cli(["rerun", parent, "--wait", "--json"]);
      expect(rerun.code, rerun.stderr).toBe(0);
      const fork = JSON.parse(rerun.stdout).run;
      expect(fork).toMatchObject({
        state: "completed",
        output: { ok: 7 },
        forkedFrom: { runId: parent, nodeId: "check" },
      });
      // Prepare and the deploy ran once in total: adopted, not run again.
      expect(lines(counter)).toEqual(["prepare", "deploy"]);
      const status = JSON.parse((await cliHere(["status", fork.runId, "--json"])).stdout);
      expect(status.attempts.map((a: { nodeId: string; adoptedFrom?: string }) => [
        a.nodeId,
        a.adoptedFrom !== undefined,
      ])).toEqual([["prepare", true], ["deploy", true], ["check", false]]);
      const text = (await cliHere(["status", fork.runId])).stdout;
      expect(text).toContain(`forked from ${parent} at check`);
      const list = (await cliHere(["list", "--all"])).stdout;
      expect(list).toMatch(new RegExp(`\\(fork of ${parent.slice(0, 8)}\\S* at check\\)`));
      // The parent stays failed: history is never rewritten.
      const parentStatus = JSON.parse((await cliHere(["status", parent, "--json"])).stdout);
      expect(parentStatus.run.state).toBe("failed");
      const effects = queryState(
        home.stateDir,
        "SELECT COUNT(*) AS n FROM effects WHERE state = 'applied'",
      );
      expect(effects[0].n).toBe(1);
      await expectDoctorClean();
    },
    240_000,
  );

  it("retry is a rerun of the failed node on the file as it is now, printed as such", async () => {
    const counter = join(home.root, "retry.log");
    writeFileSync(join(project, "retry.workflow.ts"), pipeline(`throw new Error("flaky");`));
    const parent = await startFailed("retry.workflow.ts", counter);
    writeFileSync(join(project, "retry.workflow.ts"), pipeline(`return { ok: true };`));
    const retry = await cli(["retry", parent, "--wait"]);
    expect(retry.code, retry.stderr).toBe(0);
    const short = parent.slice(0, "run-".length + 8);
    expect(retry.stdout).toContain(
      `retry ${short} = rerun ${short} --from check --source current`,
    );
    // The fork's line is its head line: no second 'Started' line for it.
    expect(retry.stdout).not.toMatch(/^Started /m);
    expect(retry.stdout).toMatch(/adopted 2 step\(s\)/);
    expect(lines(counter)).toEqual(["prepare", "deploy"]);
    // A completed run is not retried.
    const forkId = /Forked (\S+)/.exec(retry.stdout)![1];
    const again = await cli(["retry", forkId]);
    expect(again.code).toBe(3);
    expect(again.stderr).toMatch(/only a failed or timed-out run is retried/);
    await expectDoctorClean();
  }, 240_000);

  it("reruns a node inside an included workflow, and a chosen visit of a loop", async () => {
    const counter = join(home.root, "loop.log");
    const broken = loopWithInclude(`throw new Error("polish broke");`);
    writeFileSync(join(project, "inner.workflow.ts"), broken.child);
    writeFileSync(join(project, "looping.workflow.ts"), broken.parent);
    const parent = await startFailed("looping.workflow.ts", counter);
    expect(lines(counter)).toEqual(["work1", "work2", "draft"]);
    writeFileSync(
      join(project, "inner.workflow.ts"),
      loopWithInclude(`return { text: "p" };`).child,
    );

    // The default is the failed node inside the include: work, work, draft are adopted.
    const inside = await cli(["rerun", parent, "--wait", "--json"]);
    expect(inside.code, inside.stderr).toBe(0);
    const fork = JSON.parse(inside.stdout).run;
    expect(fork).toMatchObject({ state: "completed", forkedFrom: { nodeId: "write/polish" } });
    expect(lines(counter)).toEqual(["work1", "work2", "draft"]);

    // The first visit of the loop: only what came before it is adopted, the loop runs again.
    const first = await cli(["rerun", parent, "--from", "work", "--visit", "1", "--json"]);
    expect(first.code, first.stderr).toBe(0);
    const receipt = JSON.parse(first.stdout);
    expect(receipt).toMatchObject({ from: { nodeId: "work", visit: 1 }, adoptedAttempts: 0 });
    const done = await cli(["status", receipt.run.runId, "--wait", "--json"]);
    expect(done.code, done.stderr).toBe(0);
    expect(lines(counter)).toEqual(["work1", "work2", "draft", "work1", "work2", "draft"]);

    // A visit the run did not make is refused with the ones it did.
    const none = await cli(["rerun", parent, "--from", "work", "--visit", "3"]);
    expect(none.code).toBe(3);
    expect(none.stderr).toMatch(/ran node "work" 2 time\(s\); choose --visit 1 to 2/);
    await expectDoctorClean();
  }, 240_000);

  it("an ambiguous effect blocks the fork until someone records what happened", async () => {
    const gate = join(home.root, "never");
    const started = join(home.root, "ship-started");
    writeFileSync(
      join(project, "ship.workflow.ts"),
      `import { existsSync, writeFileSync } from "node:fs";
import { action, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "ship",
  startAt: "ship",
  nodes: {
    ship: action({ run: async () => {
      writeFileSync(${JSON.stringify(started)}, "");
      const deadline = Date.now() + 60_000;
      while (!existsSync(${JSON.stringify(gate)}) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      return { shipped: true };
    } }),
  },
  edges: [],
});
`,
    );
    const start = await cli(["start", join(project, "ship.workflow.ts"), "--json"]);
    expect(start.code, start.stderr).toBe(0);
    const runId = JSON.parse(start.stdout).run.runId as string;
    await waitFor(() => existsSync(started), "the deploy to start", 60_000, 50);
    expect((await cliHere(["cancel", runId])).code).toBe(0);
    const refused = await cli(["rerun", runId]);
    expect(refused.code).toBe(3);
    const effectId = /may have applied effect (\S+) without a receipt/.exec(refused.stderr)?.[1];
    expect(effectId, refused.stderr).toBeDefined();
    expect(refused.stderr).toContain(`effect resolve ${runId} ${effectId}`);
    const resolved = await cliHere(["effect", "resolve", runId, effectId!, "--not-applied"]);
    expect(resolved.code, resolved.stderr).toBe(0);
    writeFileSync(gate, "");
    const rerun = await cli(["rerun", runId, "--wait", "--json"]);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(JSON.parse(rerun.stdout).run).toMatchObject({ state: "completed" });
    await expectDoctorClean();
  }, 240_000);
});
