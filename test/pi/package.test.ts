/**
 * pi-workflows is a Pi package: `pi install <checkout>` (and the npm tarball installed as
 * docs/pi.md says) loads the extension into the real Pi, which registers `/workflow` and the `workflow` tool, lists
 * workflows with their source, starts a run bound to the session (starting the host on demand),
 * shows its progress, and reports mistakes in one line. The extension is thin: its bundle holds
 * no engine, state, host or worker module, and the Pi process reads no workflow module.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { bundleCli } from "../../compile/build.ts";
import { type FakeModel, startFakeModel } from "../support/fake-model.ts";
import { createPiSandbox, type PiSandbox, REPO_ROOT } from "../support/pi-sandbox.ts";
import { type PiRpc, startPi, stopAllPi } from "../support/pi-rpc.ts";
import { stepResponder } from "../support/step-responder.ts";
import { runWhileBusy } from "../support/wait.ts";
import { BUILTIN_WORKFLOW_INFO } from "../../src/base/builtin-workflows.ts";

/**
 * The tarball install's steps (npm pack, npm install, pi install): each fails once it has used no
 * CPU for 30 s (a hang) or run 2 minutes. The hook's own deadline is their sum, so it is never the
 * one that ends a step still working: at 60 s it did in a nice-19 run at load 10-22 (the hook
 * takes ~28 s at load 17 at nice 10, ~8 s alone).
 */
const STEP = { idleMs: 30_000, capMs: 120_000 };
const HOOK_MS = 3 * STEP.capMs + 60_000;
const RECORD_READS = fileURLToPath(new URL("./fixtures/record-reads.mjs", import.meta.url));
const ENGINE_DIRS = /src[\\/](workflows|state|host|worker|controllers|cli|viewer)[\\/]/;

describe("the extension bundle", () => {
  it("holds no engine, state, host, worker or CLI module", async () => {
    const result = await build({
      entryPoints: [join(REPO_ROOT, "src/extension/index.ts")],
      bundle: true,
      platform: "node",
      format: "esm",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.some((path) => path.startsWith("src/extension/"))).toBe(true);
    expect(inputs.filter((path) => ENGINE_DIRS.test(path))).toEqual([]);
    // Beside our own client layers, only the runtime dependencies that validate input at the
    // boundary: valibot (schemas) and croner (a schedule's cron text, checked before it is sent).
    const outside = inputs.filter((path) =>
      !/^src[\\/](extension|client|protocol|base|render|os)[\\/]/.test(path) &&
      !/node_modules[\\/](valibot|croner)[\\/]/.test(path)
    );
    expect(outside).toEqual([]);
  });
});

/** Project `.pi/workflows/hello` (the example) and a user workflow in the agent dir. */
function writeWorkflows(sandbox: PiSandbox): void {
  const project = join(sandbox.project, ".pi", "workflows");
  mkdirSync(join(project, "lib"), { recursive: true });
  cpSync(join(REPO_ROOT, "examples/hello.workflow.ts"), join(project, "hello.workflow.ts"));
  cpSync(join(REPO_ROOT, "examples/lib/greet.ts"), join(project, "lib/greet.ts"));
  const user = join(sandbox.agentDir, "workflows");
  mkdirSync(user, { recursive: true });
  writeFileSync(
    join(user, "tidy.workflow.ts"),
    'import { compute, defineWorkflow } from "@osolmaz/pi-workflows";\n' +
      'export default defineWorkflow({ name: "tidy", startAt: "a", nodes: { a: compute({ run: () => 1 }) } });\n',
  );
}

/** The notices (`ctx.ui.notify`) Pi sent since record `from`. */
function notices(pi: PiRpc, from: number): string[] {
  return pi.uiRequests(from).filter((r) => r.method === "notify").map((r) => String(r.message));
}

async function noticeMatching(pi: PiRpc, from: number, pattern: RegExp): Promise<string> {
  const record = await pi.waitFor(
    (r) =>
      r.type === "extension_ui_request" && r.method === "notify" && pattern.test(String(r.message)),
    { from, timeoutMs: 30_000, what: `a notice matching ${pattern}` },
  );
  return String(record.message);
}

describe("installed from a checkout with `pi install <dir>`", () => {
  let model: FakeModel;
  let sandbox: PiSandbox;
  let pi: PiRpc;
  let readsLog: string;

  beforeAll(async () => {
    model = await startFakeModel({ script: stepResponder(), lifetimeMs: 180_000 });
    sandbox = createPiSandbox({ modelBaseUrl: model.baseUrl });
    readsLog = join(sandbox.root, "reads.log");
    writeFileSync(readsLog, "");
    writeWorkflows(sandbox);
    await sandbox.install(REPO_ROOT);
    pi = await startPi(sandbox, {
      env: { NODE_OPTIONS: `--import=${RECORD_READS}`, PI_WORKFLOWS_TEST_READS: readsLog },
    });
  });

  afterAll(async () => {
    await stopAllPi();
    await sandbox?.cleanup();
    await model?.close();
  });

  it("registers /workflow and a workflow tool with one flat object schema", async () => {
    const commands = await pi.command({ type: "get_commands" });
    const workflow =
      (commands.data as { commands: { name: string; sourceInfo: { origin: string } }[] })
        .commands.find((c) => c.name === "workflow");
    expect(workflow?.sourceInfo.origin).toBe("package");

    const from = pi.records.length;
    await pi.prompt("hello");
    await pi.waitForSettled(from);
    const tool = (model.requests.at(-1)!.body.tools as {
      function: { name: string; parameters: Record<string, unknown> };
    }[])
      .find((t) => t.function.name === "workflow");
    expect(tool?.function.parameters).toMatchObject({
      type: "object",
      additionalProperties: false,
      required: ["action"],
    });
  });

  it("lists workflows with their source tag", async () => {
    const from = pi.records.length;
    await pi.prompt("/workflow");
    const [list] = notices(pi, from);
    const total = 2 + BUILTIN_WORKFLOW_INFO.length;
    expect(list.split("\n")).toEqual([
      `Workflows 1-${total} of ${total}:`,
      `hello  [project]  ${join(sandbox.project, ".pi/workflows/hello.workflow.ts")}`,
      `tidy  [user]  ${join(sandbox.agentDir, "workflows/tidy.workflow.ts")}`,
      ...BUILTIN_WORKFLOW_INFO.map((b) => `${b.id}  [builtin]  ${b.summary}`),
    ]);
    expect(list).toContain("sanity-check  [builtin]  Reviews the diff");
  });

  it("starts a run bound to this session, shows its progress and its end", async () => {
    const from = pi.records.length;
    const response = await pi.prompt('/workflow hello --input-json {"name":"Ada"}', 60_000);
    expect(response.data).toEqual({ disposition: "handled" });
    const started = await noticeMatching(pi, from, /^Started workflow hello/);
    const runId = /\((run-[^)]+)\)/.exec(started)![1];
    await noticeMatching(pi, from, new RegExp(`^Workflow hello completed \\(${runId}\\)`));
    const widgets = pi.uiRequests(from).filter((r) => r.method === "setWidget");
    expect(widgets.at(-1)?.widgetLines).toEqual([
      expect.stringMatching(/^✓ ƒ greet {2}\d+ms$/),
      expect.stringMatching(/^✓ \$ echo {2}\d+m?s$/),
      expect.stringMatching(/^✓ ƒ finish {2}\d+ms$/),
    ]);
    const statuses = pi.uiRequests(from).filter((r) => r.method === "setStatus");
    expect(statuses.at(-1)?.statusText).toBe("wf Say hello to Ada completed");

    const statusFrom = pi.records.length;
    await pi.prompt(`/workflow status ${runId}`);
    const [status] = notices(pi, statusFrom);
    expect(status).toContain(`Run ${runId} hello — Say hello to Ada: completed`);
    expect(status).toContain('Output: {"message":"Hello, Ada!"');
  });

  it("starts a workflow by its path, relative to Pi's working directory", async () => {
    const from = pi.records.length;
    await pi.prompt(
      '/workflow .pi/workflows/hello.workflow.ts --input-json {"name":"Grace"}',
      60_000,
    );
    const started = await noticeMatching(pi, from, /^Started workflow hello/);
    const runId = /\((run-[^)]+)\)/.exec(started)![1];
    await noticeMatching(pi, from, new RegExp(`^Workflow hello completed \\(${runId}\\)`));
    const statusFrom = pi.records.length;
    await pi.prompt(`/workflow status ${runId}`);
    expect(notices(pi, statusFrom)[0]).toContain('Output: {"message":"Hello, Grace!"');
  });

  it("reports mistakes as one line, never a stack", async () => {
    const cases: [string, RegExp][] = [
      [
        "/workflow nope-such-workflow",
        /^\/workflow: refused: .*Workflow not found: nope-such-workflow/,
      ],
      ["/workflow hello --input-json {bad", /^Invalid --input-json: /],
      ["/workflow status not-a-run", /^Not a run id: not-a-run/],
      ["/workflow cancel run-does-not-exist", /^\/workflow: not found: /],
    ];
    for (const [prompt, pattern] of cases) {
      const from = pi.records.length;
      await pi.prompt(prompt, 60_000);
      const errors = pi.uiRequests(from).filter((r) => r.notifyType === "error");
      expect(errors, prompt).toHaveLength(1);
      const message = String(errors[0].message);
      expect(message, prompt).toMatch(pattern);
      expect(message).not.toContain("\n");
      expect(message).not.toMatch(/\s+at\s+\S+:\d+/);
    }
  });

  it("read no workflow, engine, state or host module in the Pi process", () => {
    const reads = readFileSync(readsLog, "utf8").trim().split("\n").map((line) => {
      const space = line.indexOf(" ");
      return { pid: Number(line.slice(0, space)), path: line.slice(space + 1) };
    });
    const inPi = reads.filter((r) => r.pid === pi.pid).map((r) => r.path);
    expect(inPi.some((path) => path.endsWith("src/extension/index.ts"))).toBe(true);
    expect(
      inPi.filter((path) => ENGINE_DIRS.test(path) || path.endsWith(".workflow.ts")),
    ).toEqual([]);
    // The recorder works: Pi did read the client the extension imports.
    expect(inPi.some((path) => path.endsWith("src/client/host-client.ts"))).toBe(true);
  });
});

describe("installed from the npm tarball as docs/pi.md says (npm install --prefix, pi install <dir>)", () => {
  let model: FakeModel;
  let sandbox: PiSandbox;

  beforeAll(async () => {
    model = await startFakeModel({ script: stepResponder(), lifetimeMs: 180_000 });
    sandbox = createPiSandbox({ modelBaseUrl: model.baseUrl });
    writeWorkflows(sandbox);
    // docs/pi.md "From a tarball", without the network: npm installs the packed tarball and its
    // runtime dependencies under a prefix, and `pi install` adds that directory. npm gets a cache
    // of this test's own, and the dependencies come as tarballs packed from node_modules (the
    // lockfile's versions): the shared cache held their registry metadata only if another npm
    // run had fetched it (an offline install failed ENOTCACHED without), and other tests' npm
    // runs write to it meanwhile. The prepack bundle is built here (the pack skips scripts).
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    const dependencies = Object.entries(manifest.dependencies).map(([name, pinned]) => {
      const dir = join(REPO_ROOT, "node_modules", name);
      const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      expect(version, `node_modules/${name} (run npm ci)`).toBe(pinned);
      return dir;
    });
    const npmEnv = {
      ...process.env,
      npm_config_cache: join(sandbox.root, "npm-cache"),
      npm_config_update_notifier: "false",
      // npm's own error lines, if it fails, end up in the thrown error's message.
      npm_config_loglevel: "error",
    };
    // Each step is bounded by its progress (STEP), not by the wall time a loaded machine takes.
    const npm = (args: string[]) =>
      runWhileBusy("npm", args, { cwd: sandbox.root, env: npmEnv, ...STEP });
    const packed = JSON.parse(
      await npm([
        "pack",
        "--ignore-scripts",
        "--json",
        "--pack-destination",
        sandbox.root,
        REPO_ROOT,
        ...dependencies,
      ]),
    ) as { filename: string }[];
    const prefix = join(sandbox.root, "pi-workflows");
    await npm([
      "install",
      "--offline",
      "--omit=peer",
      "--no-audit",
      "--no-fund",
      "--ignore-scripts",
      "--prefix",
      prefix,
      ...packed.map((tarball) => join(sandbox.root, tarball.filename)),
    ]);
    const target = join(prefix, "node_modules", "@osolmaz", "pi-workflows");
    await bundleCli(join(target, "dist", "pi-workflows.mjs"));
    await sandbox.install(target, STEP.capMs);
  }, HOOK_MS);

  afterAll(async () => {
    await stopAllPi();
    await sandbox?.cleanup();
    await model?.close();
  });

  it("loads from node_modules and starts the host from the package's own bin", async () => {
    const pi = await startPi(sandbox);
    const commands = await pi.command({ type: "get_commands" });
    const workflow =
      (commands.data as { commands: { name: string; sourceInfo: { path: string } }[] })
        .commands.find((c) => c.name === "workflow");
    expect(workflow?.sourceInfo.path).toContain(
      join(sandbox.root, "pi-workflows", "node_modules", "@osolmaz", "pi-workflows"),
    );

    const from = pi.records.length;
    await pi.prompt("/workflow hello", 60_000);
    await noticeMatching(pi, from, /^Workflow hello completed/);
    await pi.stop();
  });
});
