/**
 * The smoke's controller phase: the file-sync example, copied into the project's
 * `.pi/controllers/`, applied with `--wait` keeps a target file in sync through a child run and
 * an effect, in a controller worker that is this very program; delete removes the target.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CommandResult, ProcessInfo } from "./processes.ts";
import type { SmokeContext } from "./scenario-phases.ts";
import { REPO_ROOT } from "./smoke-dir.ts";

export async function reconcileController(ctx: SmokeContext): Promise<void> {
  const controllers = join(ctx.dir.project, ".pi", "controllers");
  mkdirSync(controllers, { recursive: true });
  for (const file of ["file-sync.controller.ts", "copy-file.workflow.ts"]) {
    copyFileSync(join(REPO_ROOT, "examples", file), join(controllers, file));
  }
  const source = join(ctx.dir.root, "notes.md");
  const target = join(ctx.dir.root, "notes-copy.md");
  writeFileSync(source, "# Smoke notes\n");
  const spec = JSON.stringify({ source, target });
  const applied = await ctx.cli(["controller", "apply", "file-sync", "notes", "--spec-json", spec]
    .concat(["--wait", "--timeout", "90", "--json"]));
  expect(applied, "controller apply --wait");
  const detail = JSON.parse(applied.stdout);
  const ready = detail.resource?.status?.conditions?.find((c: { type: string }) =>
    c.type === "Ready"
  );
  if (ready?.status !== true || readFile(target) !== "# Smoke notes\n") {
    throw new Error(`file-sync did not sync: ${applied.stdout.slice(0, 400)}`);
  }
  const workers: ProcessInfo[] = ctx.ours().filter((p) => p.argv.includes("--controller"));
  if (workers.length !== 1 || workers[0].exe !== ctx.expectedExe) {
    throw new Error(
      `expected one controller worker running ${ctx.expectedExe}, found ${
        workers.map((w) => w.exe).join(", ") || "none"
      }`,
    );
  }
  ctx.report.steps.push("file-sync controller synced (controller worker, child run, effect)");
  expect(await ctx.cli(["controller", "delete", "file-sync", "notes", "--wait"]), "delete");
  if (existsSync(target)) throw new Error("controller delete left the target file");
  ctx.report.steps.push("controller delete ran its finalizer");
}

function readFile(path: string): string | null {
  return existsSync(path) ? readFileSync(path, "utf8") : null;
}

function expect(result: CommandResult, what: string): void {
  if (result.code === 0) return;
  const detail = (result.stderr || result.stdout).trim().split("\n").slice(-3).join(" | ");
  throw new Error(`pi-workflows ${what} exited ${result.code ?? result.signal}: ${detail}`);
}
