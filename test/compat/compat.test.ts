/**
 * Workflow files written the way 0.12 users write them (test/compat/fixtures), placed in a
 * project's `.pi/workflows/` and run by name from the CLI against a real host: an object subject
 * on a human decision answered with `pi-workflows answer`, `expiresAt` refused naming its
 * replacement, `runCommandBatch` with progress from `onItemSettled`, a title callback, an include
 * by reference with a `contract` (contractId) re-entered straight from an exit, a child's
 * `maxSteps` per invocation, and a file re-exporting a definition from
 * `@osolmaz/pi-workflows/builtins`. The agent-step parts of the 0.12 surface (the built-ins the
 * examples import) are in test/workflows/builtins.
 */
import { copyFileSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { runCliInProcess } from "../support/cli-in-process.ts";
import { ROOT, runCliProcess, type TempHome, tempHome, waitFor } from "../support/host.ts";

const FIXTURES = join(ROOT, "test/compat/fixtures");

let home: TempHome;
let project: string;

const cli = (args: string[], timeoutMs = 60_000) =>
  runCliProcess(args, home.env, timeoutMs, { cwd: project });
/**
 * A status read through the CLI's entry (runCli) in this process: the same command and output
 * without a Node start (the decision's answer goes that way too). Seven cases run at once here;
 * a Node start per read and per poll made the decision case pass 60 s on a loaded machine. The
 * starts stay CLI processes: they find the 0.12 files by name from the project directory.
 */
const statusHere = (args: string[]) => runCliInProcess(["status", ...args], home.env);

type Ran = { code: number | null; stdout: string; stderr: string };

async function json(args: string[], run?: (args: string[]) => Promise<Ran>): Promise<any> {
  const ran = await (run ?? cli)([...args, "--json"]);
  try {
    return JSON.parse(ran.stdout);
  } catch {
    throw new Error(`pi-workflows ${args.join(" ")}: exit ${ran.code}: ${ran.stderr}`);
  }
}
const statusJson = (runId: string) => json([runId], statusHere);

beforeAll(async () => {
  home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "120000" });
  project = join(home.root, "project");
  const dir = join(project, ".pi", "workflows");
  mkdirSync(dir, { recursive: true });
  for (const file of readdirSync(FIXTURES)) copyFileSync(join(FIXTURES, file), join(dir, file));
  // One host before the concurrent tests: seven clients racing to start one is not what this
  // file tests, and on a loaded machine the losers can time out on the database lock.
  const started = await cli(["host", "start"]);
  if (started.code !== 0) throw new Error(`host start: exit ${started.code}: ${started.stderr}`);
});

afterAll(async () => {
  if (home) {
    await cli(["host", "stop"]).catch(() => {});
    await home.cleanup();
  }
});

// Independent runs on one host: concurrent, so the CLI start-ups overlap.
describe.concurrent("0.12 workflow files from the CLI", () => {
  it("a human decision whose subject is an object: shown, answered with text, routed", async ({ expect }) => {
    const started = await json(["start", "proposal-review", "rename", "settings", "--wait"]);
    const run = started.run;
    expect(run.state).toBe("waiting");
    expect(run.title).toBe("review rename settings");
    const status = await statusHere([run.runId]);
    expect(status.stdout).toContain("Approve the proposal");
    expect(status.stdout).toContain('subject: {"changes":["Move settings.ts to config.ts"');
    const waiting = (await statusJson(run.runId)).waiting;
    expect(waiting.decision.subject).toEqual({
      summary: "Rename the settings module.",
      changes: ["Move settings.ts to config.ts", "Update the imports"],
      source: { task: "rename settings" },
    });
    const answer = await runCliInProcess([
      "answer",
      run.runId,
      "--choice",
      "replan",
      "--input",
      "instructions=smaller steps",
    ], home.env);
    expect(answer.stderr).toBe("");
    expect(answer.code).toBe(0);
    const ended = await waitForEnd(run.runId);
    expect(ended.state).toBe("completed");
    expect(ended.output).toEqual({
      status: "replan",
      // 0.12 callbacks read text answers as .input.<name>; callbacks see both forms (ba6b79c).
      answer: { choice: "replan", text: "smaller steps", input: { instructions: "smaller steps" } },
    });
  });

  it("expiresAt is refused with the field to use instead", async ({ expect }) => {
    const { run } = await json(["start", "expiring-approval", "--wait"]);
    expect(run.state).toBe("failed");
    expect(run.error.code).toBe("invalidRequest");
    expect(run.error.message).toContain("expiresAt is not supported: set onTimeout");
  });

  it("runCommandBatch inside an action: outcomes in order, progress per settled item", async ({ expect }) => {
    const { run } = await json(["start", "batch-check", "--wait"]);
    expect(run.state).toBe("completed");
    expect(run.output).toEqual({
      completed: 3,
      total: 3,
      outcomes: { node: "succeeded", fails: "failed", slow: "timedOut" },
      nodeSays: "2",
      failsSays: "broken",
      failsExit: 3,
    });
    const status = await statusJson(run.runId);
    expect(status.updates).toEqual([
      expect.objectContaining({
        nodeId: "checks",
        type: "progress",
        key: "checks",
        count: 3,
      }),
    ]);
  });

  it("an include by reference with a contract, re-entered from its exit, each invocation fresh", async ({ expect }) => {
    const { run } = await json(["start", "composed", "--wait"]);
    expect(run.state).toBe("completed");
    expect(run.output).toEqual({
      exit: "approved",
      output: {
        draft: "a very lon",
        round: 3,
        inspect: { long: false, round: 3, sawEarlierLocalOutputs: 0 },
        checked: true,
      },
      // prepare, three invocations of two child attempts each (the child's maxSteps is 3), done
      stepsUsed: 8,
    });
    const status = await statusJson(run.runId);
    expect(status.attempts.map((a: { nodeId: string }) => a.nodeId)).toEqual([
      "prepare",
      "review/inspect",
      "review/again",
      "review/inspect",
      "review/again",
      "review/inspect",
      "review/approve",
      "done",
    ]);
  });

  it("a contract mismatch is refused before anything runs", async ({ expect }) => {
    const start = await cli(["start", "contract-mismatch"]);
    expect(start.code).toBe(3);
    expect(start.stderr).toContain(
      'include "review" (workflow "review-child") does not match its contract: expected contractId "example.review.v2", got "example.review.v1"',
    );
  });

  it("a child's maxSteps stops a loop inside one invocation", async ({ expect }) => {
    const { run } = await json(["start", "endless-child", "--wait"]);
    expect(run.state).toBe("failed");
    expect(run.error).toEqual({
      code: "maxStepsExceeded",
      message: 'Included workflow "spinner" (mount "loop") used all 4 steps',
    });
  });

  it("a file re-exporting a definition from @osolmaz/pi-workflows/builtins runs it", async ({ expect }) => {
    const { run } = await json(["start", "builtin-echo", "hello", "--wait"]);
    expect(run.state).toBe("completed");
    expect(run.output).toEqual({ input: { task: "hello" } });
  });
});

/** The run once it ended (the CLI answers status from the host; each poll is one in-process). */
function waitForEnd(runId: string): Promise<any> {
  return waitFor(
    async () => {
      const { run } = await statusJson(runId);
      return ["completed", "failed", "timed_out", "cancelled"].includes(run.state) ? run : null;
    },
    `run ${runId} to end`,
    60_000,
    100,
  );
}
