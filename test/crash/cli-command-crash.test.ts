/**
 * The CLI commands that go through withHost (schedule, controller, logs) retry like `start`: a
 * host SIGKILLed with a `schedule add` or a `controller apply` read but not committed, or
 * committed but not answered, is replaced by the next host (started by the same CLI run), which
 * answers the same request: the stored receipt, or the command applied once by the retry. The
 * CLI exits 0 and exactly one schedule / resource exists. Real CLI and host processes.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliProcess, type TempHome, tempHome } from "../support/host.ts";
import { queryState } from "../support/state-db.ts";

let home: TempHome;
let project: string;

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  runCliProcess([...args, "--cwd", project], { ...home.env, ...env }, 120_000);

const TICK = `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "tick",
  startAt: "a",
  nodes: { a: compute({ run: () => ({ ticked: true }) }) },
});
`;

const QUIET = `import { defineController } from "pi-workflows";
export default defineController({
  name: "quiet",
  initialStatus: () => ({}),
  reconcile: (ctx) => ctx.settled({ controllerStatus: { ok: true } }),
});
`;

beforeAll(() => {
  home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "20000" });
  project = join(home.root, "project");
  mkdirSync(join(project, ".pi", "controllers"), { recursive: true });
  writeFileSync(join(project, "tick.workflow.ts"), TICK);
  writeFileSync(join(project, ".pi", "controllers", "quiet.controller.ts"), QUIET);
});

afterAll(async () => {
  if (home) {
    await runCliProcess(["host", "stop"], home.env, 30_000);
    await home.cleanup();
  }
});

/** Runs `args` with the host set to SIGKILL itself once at `point`; checks it did. */
async function crashOnce(point: string, args: string[]) {
  await runCliProcess(["host", "stop"], home.env, 30_000);
  const marker = join(home.root, `crashed-${point}`);
  const result = await cli(args, {
    PI_WORKFLOWS_CRASH_AT: point,
    PI_WORKFLOWS_CRASH_ONCE: marker,
  });
  expect(existsSync(marker), `${point} was reached`).toBe(true);
  // The next host (same environment, the marker taken) runs through: stop it so later cases
  // start theirs with their own crash point.
  await runCliProcess(["host", "stop"], home.env, 30_000);
  return result;
}

describe("a host killed during a withHost command", () => {
  for (const when of ["beforeCommit", "afterCommit"]) {
    it(`schedule add: applied exactly once when the host dies ${when}`, async () => {
      const name = `tick-${when}`;
      const receipts = () =>
        queryState(
          home.stateDir,
          "SELECT COUNT(*) AS n FROM host_commands WHERE operation = 'schedule.add'",
        )[0]!.n as number;
      const before = existsSync(join(home.stateDir, "state.sqlite")) ? receipts() : 0;
      const added = await crashOnce(`host.command.schedule.add.${when}`, [
        "schedule",
        "add",
        name,
        join(project, "tick.workflow.ts"),
        "--every",
        "1h",
      ]);
      expect(added.code, added.stderr).toBe(0);
      // The stored receipt (afterCommit) is the first answer's: "Added", not "Unchanged".
      expect(added.stdout).toContain(`Added schedule ${name}`);
      expect(queryState(home.stateDir, "SELECT name FROM schedules WHERE name = ?", name))
        .toEqual([{ name }]);
      // One receipt: the retry was answered from it or made it, never a second command.
      expect(receipts()).toBe(before + 1);
    }, 240_000);

    it(`controller apply: applied exactly once when the host dies ${when}`, async () => {
      const key = `k-${when}`;
      const applied = await crashOnce(`host.command.controller.apply.${when}`, [
        "controller",
        "apply",
        "quiet",
        key,
        "--spec-json",
        "{}",
      ]);
      expect(applied.code, applied.stderr).toBe(0);
      expect(applied.stdout).toContain(`Created quiet/${key} (version 1,`);
      expect(
        queryState(
          home.stateDir,
          "SELECT resource_key FROM controller_resources WHERE resource_key = ?",
          key,
        ),
      ).toHaveLength(1);
    }, 240_000);
  }
});
