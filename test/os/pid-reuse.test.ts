import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const FIXTURE = fileURLToPath(new URL("./fixtures/pid-reuse.ts", import.meta.url));

/** unshare with a PID namespace works here (root, or unprivileged user namespaces). */
function namespaceArgs(): string[] | null {
  if (process.platform !== "linux") return null;
  const args = process.getuid?.() === 0
    ? ["--pid", "--fork", "--mount-proc"]
    : ["--user", "--map-root-user", "--pid", "--fork", "--mount-proc"];
  const probe = spawnSync("unshare", [...args, "true"], { timeout: 10_000 });
  return probe.status === 0 ? args : null;
}

const ns = namespaceArgs();

function runFixture(backend: string, mode: string): Record<string, unknown> {
  const result = spawnSync(
    "unshare",
    [...ns!, process.execPath, FIXTURE, mode],
    {
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, PI_WORKFLOWS_PROCESS_BACKEND: backend },
    },
  );
  expect(result.stderr).toBe("");
  return JSON.parse(result.stdout.trim().split("\n").at(-1)!);
}

// The fixture forces the PID of a dead process onto a new one within the same second (a PID
// namespace's ns_last_pid): the recorded identity must neither pass for alive nor be signalled,
// under either backend.
describe.skipIf(ns === null)("a PID reused within the same second", () => {
  for (const backend of ["proc", "ps"]) {
    it(`is never signalled for a child of ours that leads its group (${backend})`, () => {
      const result = runFixture(backend, "own-child");
      expect(result).toMatchObject({
        backend,
        reuserLeadsGroup: true,
        alive: false,
        signalled: false,
        gone: true,
        stop: "alreadyGone",
        reuserAlive: true,
      });
      if (backend === "ps") expect(result.sameSecond).toBe(true);
    });

    it(`is never signalled when the new process leads no group (${backend})`, () => {
      const result = runFixture(backend, "not-leader");
      expect(result).toMatchObject({
        backend,
        reuserLeadsGroup: false,
        signalled: false,
        stop: "alreadyGone",
        reuserAlive: true,
      });
      if (backend === "ps") expect(result.sameSecond).toBe(true);
    });
  }
});
