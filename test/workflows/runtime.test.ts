/**
 * The loader and engine outside vitest: a real Node process and a real Deno process load the
 * hello example (module hooks, vm.Script import, relative helper import) and run it to the end.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { afterAll, describe, expect, it } from "vitest";

const repo = process.cwd();
const dir = mkdtempSync(join(tmpdir(), "piw-runtime-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const script = join(dir, "drive.ts");
writeFileSync(
  script,
  `
import { decideNext, executeNode, loadWorkflow, normalizeWorkflowInput, unavailableAgentExecutor } from ${
    JSON.stringify(join(repo, "src/workflows/index.ts"))
  };
const { workflow, identity } = await loadWorkflow(${
    JSON.stringify(join(repo, "examples/hello.workflow.ts"))
  }, { cwd: ${JSON.stringify(dir)} });
const facts = { runId: "r", workflowName: workflow.name, input: normalizeWorkflowInput(workflow, { name: "Runtime" }).input, attempts: [] as any[] };
for (let seq = 1; ; seq++) {
  const step = decideNext(workflow, facts);
  if (step.kind !== "startNode") {
    console.log(JSON.stringify({ step, mounted: identity.workflowSource.mounted.length, root: identity.workflowSource.root, hashes: identity.workflowSource.mounted.map((m: any) => m.hash) }));
    break;
  }
  const r: any = await executeNode(workflow, step.nodeId, {
    facts, attemptId: "a" + seq, signal: new AbortController().signal,
    publishUpdate: () => {}, agent: unavailableAgentExecutor("none"),
  });
  facts.attempts.push({ attemptId: "a" + seq, nodeId: step.nodeId, sequence: seq, nodeKind: step.nodeKind,
    effect: step.effect, state: r.outcome, output: r.output, error: r.error, startedAt: 0, finishedAt: 1, deadlineAt: null });
}
`,
);

function run(
  command: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: repo,
      env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const fileHash = (path: string) =>
  `sha256:${createHash("sha256").update(readFileSync(path)).digest("hex")}`;
const hello = join(repo, "examples/hello.workflow.ts");

const expected = {
  step: {
    kind: "complete",
    output: { message: "Hello, Runtime!", steps: ["greet", "echo", "finish"] },
    presentationPrompt: null,
  },
  mounted: 1,
  // The identity hashes the files' own bytes on every runtime, so a worker's pre-load check agrees.
  root: { kind: "file", path: hello, hash: fileHash(hello) },
  hashes: [fileHash(join(repo, "examples/lib/greet.ts"))],
};

describe("loading outside the test runner", () => {
  it("plain Node runs hello with no warning on stderr", async () => {
    const r = await run(process.execPath, [script]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(expected);
  });

  it("Deno runs the same source unchanged", async () => {
    const r = await run(join(repo, "node_modules/.bin/deno"), [
      "run",
      "-A",
      "--config",
      join(repo, "deno.json"),
      script,
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(expected);
  });
});
