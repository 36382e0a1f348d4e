/**
 * Every run the documented limits accept can be resumed and inspected: a run whose committed
 * facts pass one protocol message (outputs near the limit) is interrupted (paused) and resumed,
 * and completes; `status` shows the last attempts by default and every attempt on request, a
 * page at a time; `list` pages too and says how many runs it did not show. (A 10,000-step run:
 * test/host/supervision/long-run.test.ts.)
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/wait.ts";
import { runCliProcess, type TempHome, tempHome } from "../support/host.ts";
import { seedAttempts, seedRuns } from "../support/host-seed.ts";

let home: TempHome;
let project: string;

const cli = (args: string[], env = home.env) => runCliProcess(args, env, 120_000);

/** A node's output of `chars` characters (under the 960 KiB output limit). */
const big = (chars: number) => `compute({ run: () => ({ text: "é".repeat(${chars}) }) })`;

const GATE = `compute({ run: async ({ input }) => {
      const deadline = Date.now() + 120_000;
      while (!existsSync(input.gate) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      return "open";
    } })`;

beforeAll(() => {
  home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "10000" });
  project = join(home.root, "project");
  mkdirSync(project);
  // Outputs of 600 KiB, 600 KiB and ~950 KiB (two bytes per "é"): 2.1 MiB of committed facts.
  writeFileSync(
    join(project, "large.workflow.ts"),
    `import { existsSync } from "node:fs";
import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "large",
  startAt: "a",
  nodes: { a: ${big(300 * 1024)}, b: ${big(300 * 1024)}, c: ${big(475 * 1024)}, gate: ${GATE},
    done: compute({ run: ({ outputs }) => outputs.a.text.length + outputs.c.text.length }) },
  edges: [{ from: "a", to: "b" }, { from: "b", to: "c" }, { from: "c", to: "gate" },
    { from: "gate", to: "done" }],
});
`,
  );
});

afterAll(async () => {
  if (home) {
    await cli(["host", "stop"]);
    await home.cleanup();
  }
});

function runState(runId: string): string[] {
  const db = new DatabaseSync(join(home.stateDir, "state.sqlite"), {
    readOnly: true,
    timeout: 10_000,
  });
  try {
    const row = db.prepare(
      "SELECT r.state, q.state AS queue, (SELECT node_id FROM node_attempts a WHERE " +
        "a.run_id = r.run_id AND a.state = 'running') AS node, r.error_message AS error " +
        "FROM runs r JOIN run_queue q ON q.run_id = r.run_id WHERE r.run_id = ?",
    ).get(runId) as { state: string; queue: string; node: string | null; error: string | null };
    return [row.state, row.queue, row.node ?? "", row.error ?? ""];
  } finally {
    db.close();
  }
}

/** Starts `workflow`, waits for its gate, pauses and resumes it, opens the gate; the run ends. */
async function interruptAtGate(workflow: string, input: object): Promise<string> {
  const gate = join(home.root, `${workflow}.gate`);
  const started = await cli([
    "start",
    workflow,
    "--cwd",
    project,
    "--input-json",
    JSON.stringify({ ...input, gate }),
    "--json",
  ]);
  expect(started.code, started.stderr).toBe(0);
  const runId = (JSON.parse(started.stdout) as { run: { runId: string } }).run.runId;
  await waitFor(
    () => runState(runId)[2] === "gate" || ["failed", "completed"].includes(runState(runId)[0]),
    () => `${workflow} to reach its gate (now: ${runState(runId)})`,
    120_000,
    50,
  );
  expect(runState(runId)[2], String(runState(runId))).toBe("gate");
  expect((await cli(["pause", runId])).code).toBe(0);
  expect((await cli(["resume", runId])).code).toBe(0);
  // The relaunched worker received every committed fact, or it could not be at the gate again.
  await waitFor(
    () => runState(runId)[2] === "gate" || runState(runId)[0] === "failed",
    () => `the relaunch to reach the gate (now: ${runState(runId)})`,
    60_000,
    50,
  );
  expect(runState(runId)[2], `not relaunched: ${runState(runId)}`).toBe("gate");
  writeFileSync(gate, "open");
  await waitFor(
    () => ["completed", "failed"].includes(runState(runId)[0]),
    () => `${workflow} to end (now: ${runState(runId)})`,
    60_000,
    50,
  );
  expect(runState(runId).slice(0, 2), String(runState(runId))).toEqual(["completed", "done"]);
  return runId;
}

describe("limits that hold", () => {
  it("resumes a run whose facts pass one message (outputs near the limit)", async () => {
    const runId = await interruptAtGate("large.workflow.ts", {});
    const status = await cli(["status", runId, "--json"]);
    expect(status.code, status.stderr).toBe(0);
    const receipt = JSON.parse(status.stdout) as { run: { output: number }; attemptCount: number };
    expect(receipt.run.output).toBe(775 * 1024);
    expect(receipt.attemptCount).toBe(6); // a, b, c, gate (interrupted by the pause), gate, done
  }, 180_000);

  it("pages status and list, and says what it left out", async () => {
    const seeded = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "5000" });
    try {
      seedRuns(seeded.stateDir, Array.from({ length: 1_205 }, (_, i) => ({ runId: `run-${i}` })));
      // 1,500 attempts with 2,000-character errors: about 6 MB of status, many messages.
      seedAttempts(seeded.stateDir, "run-7", 1_500, 2_000);
      const last = await cli(["status", "run-7"], seeded.env);
      expect(last.code, last.stderr).toBe(0);
      expect(last.stdout).toContain(
        "nodes (the last 20 of 1500 attempts; --attempts all shows every one):",
      );
      expect(last.stdout).toMatch(/✗ n3 +compute, failed/);
      const every = await cli(["status", "run-7", "--attempts", "all", "--json"], seeded.env);
      expect(every.code, every.stderr).toBe(0);
      const status = JSON.parse(every.stdout) as {
        attempts: { sequence: number; error: { message: string } }[];
        attemptCount: number;
      };
      expect(status.attemptCount).toBe(1_500);
      expect(status.attempts.map((a) => a.sequence)).toEqual(
        Array.from({ length: 1_500 }, (_, i) => i + 1),
      );
      expect(status.attempts[0].error.message).toHaveLength(2_000);

      const list = await cli(["list"], seeded.env);
      expect(list.code, list.stderr).toBe(0);
      const lines = list.stdout.trim().split("\n");
      expect(lines).toHaveLength(51);
      expect(lines.at(-1)).toBe(
        "Showing 50 of 1205 active runs: --limit N or --all shows more",
      );
      const limited = JSON.parse(
        (await cli(["list", "--limit", "1100", "--json"], seeded.env))
          .stdout,
      ) as { runs: { runId: string }[]; total: number };
      expect([limited.runs.length, limited.total]).toEqual([1_100, 1_205]);
      const all = JSON.parse((await cli(["list", "--all", "--json"], seeded.env)).stdout) as {
        runs: { runId: string }[];
      };
      expect(new Set(all.runs.map((r) => r.runId)).size).toBe(1_205);
    } finally {
      await cli(["host", "stop"], seeded.env);
      await seeded.cleanup();
    }
  }, 120_000);
});
