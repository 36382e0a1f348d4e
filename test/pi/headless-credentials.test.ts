/**
 * Provider credentials of headless runs, with the real Pi and the fake model: a key Pi reads
 * (`OPENAI_API_KEY`) in the starting shell and a credential-looking `--env` variable reach the
 * Pi child (the fake model sees them in the request headers); the `--env` one, named for the
 * run, also reaches its workflow code and shell nodes, the discovered key does not; neither is
 * in any byte of the state directory (database, WAL, logs, tails). A
 * host that restarted no longer holds them: the run blocks `credentialsMissing` before its next
 * worker, status says to resume it from a shell that has them, and that resume brings them
 * back to Pi.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliProcess } from "../support/host.ts";
import { fakeModels } from "../support/pi-sandbox.ts";
import { waitFor } from "../smoke/processes.ts";
import { createHeadlessEnv, type HeadlessEnv } from "../support/headless-env.ts";

const PROVIDER_KEY = "sk-planted-provider-91d3e7";
const TOOL_KEY = "tk-planted-tool-5c28aa";

/** The fake provider takes its key and one header from the environment Pi runs with. */
const envModels = (baseUrl: string) =>
  fakeModels(baseUrl, {
    apiKey: "$OPENAI_API_KEY",
    headers: { "x-tool-key": "$PIW_TOOL_API_KEY" },
  });

const SEEN_BY_CODE =
  `import { agent, checkpoint, compute, defineWorkflow, shell } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "keys",
  startAt: "look",
  nodes: {
    look: compute({ run: () => ({
      provider: (process.env.OPENAI_API_KEY ?? "").length,
      tool: (process.env.PIW_TOOL_API_KEY ?? "").length,
    }) }),
    sh: shell({ exec: () => ({
      command: "echo \${#OPENAI_API_KEY} \${#PIW_TOOL_API_KEY}",
      shell: true,
    }) }),
    first: agent({ prompt: "Do the first part.", expectedOutput: '{"ok": true}' }),
    gate: checkpoint({ summary: "go on?" }),
    work: agent({ prompt: "Do the rest.", expectedOutput: '{"ok": true}' }),
    finish: compute({ run: ({ outputs }) => ({
      code: outputs.look,
      shell: outputs.sh.stdout.trim(),
      work: outputs.work,
    }) }),
  },
  edges: [
    { from: "look", to: "sh" },
    { from: "sh", to: "first" },
    { from: "first", to: "gate" },
    { from: "gate", to: "work" },
    { from: "work", to: "finish" },
  ],
});
`;

/** Files under `dir`; one that vanishes while we look (Node's compile cache renames its temp files) is skipped. */
function listFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat?.isDirectory()) return listFiles(path);
    return stat?.isFile() ? [path] : [];
  });
}

function readIfPresent(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return Buffer.alloc(0);
    throw error;
  }
}

describe("provider credentials of headless runs", () => {
  let h: HeadlessEnv;

  beforeAll(async () => {
    // A compile cache of its own: the test reads every file under the state directory.
    h = await createHeadlessEnv({
      env: { OPENAI_API_KEY: PROVIDER_KEY },
      modelsJson: envModels,
      ownCompileCache: true,
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  const expectNowhereInState = () => {
    const files = listFiles(h.sandbox.stateDir);
    expect(files.some((f) => f.endsWith("state.sqlite"))).toBe(true);
    for (const file of files) {
      const bytes = readIfPresent(file);
      expect(bytes.includes(PROVIDER_KEY), file).toBe(false);
      expect(bytes.includes(TOOL_KEY), file).toBe(false);
    }
  };

  /** Every model request since `from` carried both planted keys. */
  const expectKeysSent = (from: number, prompt: string) => {
    const requests = h.model.requests.slice(from);
    expect(requests.some((r) => r.lastUserText.includes(prompt))).toBe(true);
    for (const request of requests) {
      expect(request.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
      expect(request.headers["x-tool-key"]).toBe(TOOL_KEY);
    }
  };

  it(
    "reach Pi (a named one the run's nodes too), in memory only; after a host restart the run waits for a resume that brings them",
    async () => {
      const start = h.model.requests.length;
      const path = h.writeWorkflow("keys.workflow.ts", SEEN_BY_CODE);
      const started = await h.cli([
        "start",
        path,
        "--cwd",
        h.sandbox.project,
        "--env",
        `PIW_TOOL_API_KEY=${TOOL_KEY}`,
        "--json",
      ]);
      // Start says where the named secret goes.
      expect(started.stderr.trim()).toBe(
        "--env PIW_TOOL_API_KEY: kept in the host's memory only (never stored), for this run's " +
          "workers, its shell and action nodes and Pi; after a host restart, resume the run from " +
          "a shell that has them",
      );
      const runId: string = JSON.parse(started.stdout).run.runId;
      // Polls run the CLI's entry here (no Node start each); every output checked for the keys
      // comes from a CLI process of the sandbox's environment.
      await waitFor("the run to wait at its checkpoint", 60_000, async () => {
        const status = await h.cliHereJson(["status", runId]);
        return status.run.state === "waiting" ? status : undefined;
      });
      expectKeysSent(start, "Do the first part.");
      expectNowhereInState();

      // A restarted host holds no credentials: the shell that answers has none either.
      expect((await h.cli(["host", "stop"], 30_000)).code).toBe(0);
      const bare = { ...h.env };
      delete bare.OPENAI_API_KEY;
      const answered = await runCliProcess(["answer", runId, "yes"], bare, 60_000);
      expect(answered.stderr).toBe("");
      const blocked = await waitFor("the run to block", 60_000, async () => {
        const status = await h.cliHereJson(["status", runId]);
        return status.run.blockedReason ? status : undefined;
      });
      expect(blocked.run.blockedReason).toBe("credentialsMissing");
      const text = (await h.cli(["status", runId])).stdout;
      expect(text).toContain("no longer holds the provider keys this run was started with");
      expect(text).toContain(`pi-workflows resume ${runId}`);
      expect(h.model.requests.some((r) => r.lastUserText.includes("Do the rest."))).toBe(false);

      // The resume from a shell with the keys brings them back to Pi (the --env one included).
      const from = h.model.requests.length;
      const resumed = await runCliProcess(
        ["resume", runId, "--json"],
        { ...h.env, PIW_TOOL_API_KEY: TOOL_KEY },
        60_000,
      );
      expect(resumed.code).toBe(0);
      const done = await waitFor("the run to complete", 90_000, async () => {
        const status = await h.cliHereJson(["status", runId]);
        return status.run.state === "completed" || status.run.state === "failed"
          ? status
          : undefined;
      });
      expect(done.run.state).toBe("completed");
      expectKeysSent(from, "Do the rest.");
      // Workflow code and its shell nodes see the named one, never the discovered provider key.
      const output = JSON.parse((await h.cli(["status", runId, "--json"])).stdout).run.output;
      expect(output).toEqual({
        code: { provider: 0, tool: TOOL_KEY.length },
        shell: `0 ${TOOL_KEY.length}`,
        work: { ok: true },
      });
      for (
        const text of [
          (await h.cli(["status", runId, "--json"])).stdout,
          (await h.cli(["list", "--all", "--json"])).stdout,
          (await h.cli(["host", "status", "--json"])).stdout,
        ]
      ) {
        expect(text).not.toContain(PROVIDER_KEY);
        expect(text).not.toContain(TOOL_KEY);
      }
      expectNowhereInState();
    },
    120_000,
  );
});
