/**
 * The example controller (examples/file-sync.controller.ts with its child workflow) end to end
 * through the CLI and a real host: apply keeps a file in sync through a child run and an effect,
 * a source edit plus `controller reconcile` syncs again, `controller delete` waits for the
 * finalizer, `doctor` is clean. Also the CLI's refusals: unknown resource, unknown controller, a
 * source that changed while it was resolved, a compare-and-set on the resource version.
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliInProcess } from "../support/cli-in-process.ts";
import {
  ROOT,
  runCliProcess,
  spawnCli,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../support/host.ts";

let home: TempHome;
let project: string;

const cli = (args: string[], timeoutMs = 90_000) =>
  runCliProcess([...args, "--cwd", project], home.env, timeoutMs);
/**
 * What asks the running host without --wait (gets, lists, refusals, an apply, a poll) goes through
 * the CLI's entry in this process: a Node start per command was most of this file's time. The
 * --wait commands, whose exit codes are the point, stay processes.
 */
const here = (args: string[]) => runCliInProcess([...args, "--cwd", project], home.env);

beforeAll(() => {
  // One host for the file (a 5 s idle stopped it between cases, and the next command started
  // another); afterAll stops it, and a leaked one exits on its own within a minute.
  home = tempHome({
    PI_WORKFLOWS_HOST_IDLE_MS: "60000",
    PI_WORKFLOWS_KILL_GRACE_MS: "500",
    PI_WORKFLOWS_RECONCILE_BACKOFF_MS: "200",
  });
  project = join(home.root, "project");
  const controllers = join(project, ".pi", "controllers");
  mkdirSync(controllers, { recursive: true });
  for (const file of ["file-sync.controller.ts", "copy-file.workflow.ts"]) {
    copyFileSync(join(ROOT, "examples", file), join(controllers, file));
  }
});

afterAll(async () => {
  await runCliProcess(["host", "stop"], home.env, 30_000);
  await home.cleanup();
});

describe("the file-sync example from the CLI", () => {
  it("applies, syncs through a child run and an effect, follows an edit, deletes", async () => {
    const source = join(home.root, "notes.md");
    const target = join(home.root, "copy", "notes.md");
    mkdirSync(join(home.root, "copy"));
    writeFileSync(source, "# Notes\n");
    const spec = JSON.stringify({ source, target });
    const applied = await cli([
      "controller",
      "apply",
      "file-sync",
      "notes",
      "--spec-json",
      spec,
      "--wait",
    ]);
    expect(applied.stderr).toBe("");
    expect(applied.code, applied.stdout).toBe(0);
    expect(applied.stdout).toContain("Created file-sync/notes (version 1, generation 1)");
    expect(applied.stdout).toContain("Ready=True Synced");
    expect(readFileSync(target, "utf8")).toBe("# Notes\n");
    expect(existsSync(`${target}.synced`)).toBe(true);

    writeFileSync(source, "# Notes\n\nmore\n");
    const again = await cli(["controller", "reconcile", "file-sync", "notes", "--wait"]);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(readFileSync(target, "utf8")).toBe("# Notes\n\nmore\n");

    const list = await here(["controller", "list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^file-sync {2}sha256:/m);
    expect(list.stdout).toMatch(
      /^ {2}file-sync\/notes {2}version \d+, generation 1 {2}settled, next/m,
    );

    const got = await here(["controller", "get", "file-sync", "notes", "--json"]);
    expect(got.code).toBe(0);
    const detail = JSON.parse(got.stdout);
    expect(detail.resource.metadata.finalizers).toEqual(["file-sync/remove-target"]);
    expect(detail.workflows.map((w: { state: string }) => w.state)).toEqual([
      "succeeded",
      "succeeded",
    ]);
    expect(detail.effects.map((e: { state: string }) => e.state)).toEqual(["applied", "applied"]);
    // Its child runs by their short ids, as every text output shows run ids.
    const text = await here(["controller", "get", "file-sync", "notes"]);
    const childRun = detail.workflows[0].runId as string;
    expect(text.stdout).toContain(`, run ${childRun.slice(0, "run-".length + 8)})`);
    expect(text.stdout).not.toContain(childRun);

    const deleted = await cli(["controller", "delete", "file-sync", "notes", "--wait"]);
    expect(deleted.code, deleted.stdout + deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain("waiting for its finalizers (file-sync/remove-target)");
    expect(deleted.stdout).toContain("Deleted file-sync/notes");
    expect(existsSync(target)).toBe(false);
    const gone = await here(["controller", "get", "file-sync", "notes"]);
    expect(gone.code).toBe(3);
    expect(gone.stderr).toContain("Controller resource not found: file-sync/notes");
    const doctor = await runCliProcess(["doctor"], home.env);
    expect(doctor.stdout).toContain("Invariants: all hold");
  }, 120_000);

  it("refuses what it must, with one line and exit 3 (2 for usage)", async () => {
    const missing = await here(["controller", "apply", "nope", "k"]);
    expect(missing.code).toBe(3);
    expect(missing.stderr.trim().split("\n")).toHaveLength(1);
    expect(missing.stderr).toContain("Controller not found: nope");

    const usage = await here(["controller", "apply", "file-sync", "k", "--spec-json", "{"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("Invalid --spec-json");

    const badSpec = await here(["controller", "apply", "file-sync", "k", "--spec-json", "{}"]);
    expect(badSpec.code).toBe(3);
    expect(badSpec.stderr).toContain('the spec needs "source" and "target" paths');

    const spec = JSON.stringify({ source: "/nonexistent/a", target: "/nonexistent/b" });
    const stale = await here([
      "controller",
      "apply",
      "file-sync",
      "cas",
      "--spec-json",
      spec,
      "--expect-version",
      "4",
    ]);
    expect(stale.code).toBe(3);
    expect(stale.stderr).toContain(
      "Resource version conflict for file-sync/cas: expected 4, found 0",
    );

    // A controller that edits its own file while it loads: the resolved bytes are not the
    // file's any more, so the host refuses to pin it.
    writeFileSync(
      join(project, ".pi", "controllers", "drift.controller.ts"),
      `import { appendFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineController } from "@osolmaz/pi-workflows";
appendFileSync(fileURLToPath(import.meta.url), "\\n// loaded " + Date.now() + "\\n");
export default defineController({
  name: "drift",
  initialStatus: () => ({}),
  reconcile: (ctx) => ctx.settled(),
});
`,
    );
    const drift = await here(["controller", "apply", "drift", "d"]);
    expect(drift.code).toBe(3);
    expect(drift.stderr).toContain(
      "Workflow source changed: 1 changed while the controller was resolved",
    );
    const none = await here(["controller", "list", "drift"]);
    expect(none.stdout).toBe("No controllers in this project\n");
  }, 120_000);

  it(
    "an effect cut off mid-apply is ambiguous until an operator's verdict; then it applies",
    async () => {
      // Non-resumable (no observe, not idempotent); the first apply hangs past the deadline.
      writeFileSync(
        join(project, ".pi", "controllers", "once.controller.ts"),
        `import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import { defineController } from "@osolmaz/pi-workflows";
export default defineController({
  name: "once",
  timeoutMs: 1000,
  initialStatus: () => ({}),
  async reconcile(ctx, resource) {
    const { marker, log } = resource.spec;
    const effect = await ctx.effects.ensure({
      key: "send",
      kind: "mail.send",
      request: {},
      apply: async () => {
        appendFileSync(log, "apply\\n");
        if (!existsSync(marker)) {
          writeFileSync(marker, "hung once");
          await new Promise(() => {});
        }
        return { sent: true };
      },
    });
    return ctx.settled({ controllerStatus: { effect: effect.state } });
  },
});
`,
      );
      const log = join(home.root, "once.log");
      const spec = JSON.stringify({ marker: join(home.root, "once.marker"), log });
      expect((await here(["controller", "apply", "once", "r", "--spec-json", spec])).code).toBe(0);
      const status = async () =>
        JSON.parse((await here(["controller", "get", "once", "r", "--json"])).stdout);
      let detail: any;
      await waitFor(
        async () =>
          (detail = await status()).resource.status.controllerStatus?.effect === "ambiguous",
        () => `the effect to be ambiguous: ${JSON.stringify(detail?.resource.status)}`,
        60_000,
        200,
      );
      expect(detail.resource.status.controllerStatus).toEqual({ effect: "ambiguous" });
      const [effect] = detail.effects;
      expect(effect).toMatchObject({ kind: "mail.send", state: "ambiguous" });
      expect(readFileSync(log, "utf8")).toBe("apply\n"); // never retried automatically

      const wrong = await here([
        "controller",
        "reconcile",
        "once",
        "r",
        "--effect",
        "effect-x",
        "--not-applied",
      ]);
      expect(wrong.code).toBe(3);
      expect(wrong.stderr.trim()).toMatch(
        /^Host answered notFound: once\/r has no effect effect-x \(see 'pi-workflows controller get'\)$/,
      );
      const resolved = await cli([
        "controller",
        "reconcile",
        "once",
        "r",
        "--effect",
        effect.effectId,
        "--not-applied",
        "--wait",
      ]);
      expect(resolved.code, resolved.stdout + resolved.stderr).toBe(0);
      expect(resolved.stdout).toContain(`Effect ${effect.effectId} is pending now`);
      expect((await status()).resource.status.controllerStatus).toEqual({ effect: "applied" });
      expect(readFileSync(log, "utf8")).toBe("apply\napply\n");
      const again = await here([
        "controller",
        "reconcile",
        "once",
        "r",
        "--effect",
        effect.effectId,
        "--applied",
        "{}",
      ]);
      expect(again.code).toBe(3);
      expect(again.stderr).toContain("is applied, not ambiguous");
      const doctor = await runCliProcess(["doctor"], home.env);
      expect(doctor.stdout).toContain("Invariants: all hold");
    },
    120_000,
  );
});

describe("a controller whose source is gone while a resource is deleted", () => {
  it("delete --wait says it is blocked; restoring it and reconcile finish the delete", async () => {
    // Before, only an apply unblocked a controller, and a resource being deleted refuses applies:
    // the delete could never finish.
    const own = tempHome({
      PI_WORKFLOWS_HOST_IDLE_MS: "30000",
      PI_WORKFLOWS_KILL_GRACE_MS: "500",
      PI_WORKFLOWS_CONTROLLER_IDLE_MS: "100",
    });
    const dir = join(own.root, "project");
    const controllers = join(dir, ".pi", "controllers");
    mkdirSync(controllers, { recursive: true });
    for (const file of ["file-sync.controller.ts", "copy-file.workflow.ts"]) {
      copyFileSync(join(ROOT, "examples", file), join(controllers, file));
    }
    const run = (args: string[]) => runCliProcess([...args, "--cwd", dir], own.env, 90_000);
    const ask = (args: string[]) => runCliInProcess([...args, "--cwd", dir], own.env);
    try {
      const source = join(own.root, "todo.md");
      const target = join(own.root, "todo-copy.md");
      writeFileSync(source, "- one\n");
      const spec = JSON.stringify({ source, target });
      const applied = await run([
        "controller",
        "apply",
        "file-sync",
        "todo",
        "--spec-json",
        spec,
        "--wait",
      ]);
      expect(applied.code, applied.stdout + applied.stderr).toBe(0);
      expect(readFileSync(target, "utf8")).toBe("- one\n");
      // The worker that loaded the source goes once idle; the next one verifies the files.
      const log = join(own.stateDir, "host.log");
      await waitFor(
        () => readFileSync(log, "utf8").includes("controller.worker_exit controller=file-sync"),
        "the idle controller worker to exit",
        30_000,
      );

      const file = join(controllers, "file-sync.controller.ts");
      renameSync(file, `${file}.aside`);
      const deleting = await run(["controller", "delete", "file-sync", "todo", "--wait"]);
      expect(deleting.code, deleting.stdout + deleting.stderr).toBe(7);
      expect(deleting.stdout).toContain("controller blocked: sourceChanged");
      expect(deleting.stdout).toContain("once the source is right, reconcile the resource");
      expect(existsSync(target)).toBe(true);
      expect((await ask(["controller", "apply", "file-sync", "todo", "--spec-json", spec])).code)
        .toBe(3);

      renameSync(`${file}.aside`, file);
      const finished = await run(["controller", "reconcile", "file-sync", "todo", "--wait"]);
      expect(finished.code, finished.stdout + finished.stderr).toBe(0);
      expect(finished.stdout).toContain("Deleted file-sync/todo");
      expect(existsSync(target)).toBe(false);
      expect((await ask(["controller", "list"])).stdout).not.toContain("blocked");
    } finally {
      await runCliProcess(["host", "stop"], own.env, 30_000);
      own.cleanup();
    }
  }, 120_000);
});

describe("controller --wait with a host that stops answering", () => {
  it(
    "ends at its --timeout, as any timeout does, not after the client's 60 s of retries",
    async () => {
      const own = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "30000" });
      const dir = join(own.root, "project");
      mkdirSync(join(dir, ".pi", "controllers"), { recursive: true });
      // Never settles: something is always due within a second.
      writeFileSync(
        join(dir, ".pi", "controllers", "busy.controller.ts"),
        `import { defineController } from "@osolmaz/pi-workflows";
export default defineController({
  name: "busy",
  initialStatus: () => ({}),
  reconcile: (ctx) => ctx.requeueAfter(200),
});
`,
      );
      // A loaded machine may take longer than the helper's 15 s to start a host.
      const host = spawnCli(["host", "run"], own.env);
      await host.waitForStderr("host.ready", 90_000);
      const wait = spawnCli(
        ["controller", "apply", "busy", "r", "--wait", "--timeout", "3", "--cwd", dir],
        own.env,
      );
      try {
        await wait.waitForStdout("Created busy/r", 60_000);
        // A frozen host: connections are accepted and never answered.
        process.kill(host.pid, "SIGSTOP");
        const frozeAt = Date.now();
        const { code } = await wait.exited;
        const waited = Date.now() - frozeAt;
        expect(code, wait.stdout() + wait.stderr()).toBe(7);
        expect(wait.stdout()).toMatch(/Not settled within 3 s; it goes on in the host\n$/);
        // Its 3 s, a probe of the frozen host (at most 4 s) and the scheduling of a loaded
        // machine; the client's retries alone were 30 to 60 s.
        expect(waited).toBeLessThan(20_000);
      } finally {
        process.kill(host.pid, "SIGCONT");
        wait.kill("SIGKILL");
        await stopProcess(host);
        await own.cleanup();
      }
    },
    120_000,
  );
});
