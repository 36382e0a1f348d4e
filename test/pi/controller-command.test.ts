/**
 * `/controller` in the real Pi (the installed extension, a host it starts on demand): apply the
 * file-sync example with a spec, a notice when it settled, list and get it, a reconcile after an
 * edit, delete waiting for its finalizer, an interactive child of a controller run in the session
 * that approved it with `/controller bind` (its step shown here and submitted by the model; the
 * session id reaches the state only), `unbind`, and one-line refusals (bad arguments, an unknown controller, a
 * stale compare-and-set).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeModel, startFakeModel } from "../support/fake-model.ts";
import { createPiSandbox, type PiSandbox, REPO_ROOT } from "../support/pi-sandbox.ts";
import { type PiRpc, type RpcRecord, startPi, stopAllPi } from "../support/pi-rpc.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import { queryAll } from "../../src/state/statements.ts";
import { withStore } from "../support/interactive-fixtures.ts";
import { stepResponder } from "../support/step-responder.ts";
import { ASK, ASKER } from "../controllers/session-binding-fixtures.ts";

const CLI = join(REPO_ROOT, "src/cli/main.ts");

let model: FakeModel;
let sandbox: PiSandbox;
let pi: PiRpc;

beforeAll(async () => {
  // Plays a model doing workflow steps: the controller's interactive child's step arrives here.
  model = await startFakeModel({
    script: stepResponder({ output: () => ({ n: 7 }) }),
    lifetimeMs: 180_000,
  });
  sandbox = createPiSandbox({ modelBaseUrl: model.baseUrl });
  const controllers = join(sandbox.project, ".pi", "controllers");
  mkdirSync(controllers, { recursive: true });
  for (const file of ["file-sync.controller.ts", "copy-file.workflow.ts"]) {
    copyFileSync(join(REPO_ROOT, "examples", file), join(controllers, file));
  }
  writeFileSync(join(controllers, "asker.controller.ts"), ASKER);
  mkdirSync(join(sandbox.project, ".pi", "workflows"), { recursive: true });
  writeFileSync(join(sandbox.project, ".pi", "workflows", "ask.workflow.ts"), ASK);
  await sandbox.install(REPO_ROOT);
  pi = await startPi(sandbox);
}, 120_000);

afterAll(async () => {
  await stopAllPi();
  if (sandbox) spawnSync(process.execPath, [CLI, "host", "stop"], { env: sandbox.env });
  await sandbox?.cleanup();
  await model?.close();
});

/** Sends `/controller <args>` and returns the notices up to the one matching `until`. */
async function controller(args: string, until: RegExp, timeoutMs = 60_000): Promise<string[]> {
  const from = pi.records.length;
  const response = await pi.prompt(`/controller ${args}`, timeoutMs);
  expect(response.data).toEqual({ disposition: "handled" });
  const line = (r: RpcRecord) => `${r.notifyType ?? "info"}: ${r.message}`;
  await pi.waitFor(
    (r) => r.type === "extension_ui_request" && r.method === "notify" && until.test(line(r)),
    { from, timeoutMs, what: `a notice matching ${until}` },
  );
  const seen = pi.uiRequests(from).filter((r) => r.method === "notify").map(line);
  return seen;
}

describe("/controller", () => {
  it("registers the command from the package", async () => {
    const commands = await pi.command({ type: "get_commands" });
    const found = (commands.data as { commands: { name: string; description: string }[] })
      .commands.find((c) => c.name === "controller");
    expect(found?.description).toMatch(/^Controller resources\. \/controller \[list/);
  });

  it("applies the example, tells when it settled, lists, gets, reconciles, deletes", async () => {
    const source = join(sandbox.root, "notes.md");
    const target = join(sandbox.root, "notes-copy.md");
    writeFileSync(source, "# Notes\n");
    const spec = JSON.stringify({ source, target });
    const applied = await controller(`apply file-sync notes ${spec}`, /observed|failing|blocked/);
    expect(applied[0]).toBe("info: Created file-sync/notes (version 1, generation 1)");
    expect(applied.at(-1)).toMatch(
      /^info: file-sync\/notes \(version \d+, generation 1\), observed 1: settled/,
    );
    expect(readFileSync(target, "utf8")).toBe("# Notes\n");

    const listed = await controller("list", /^/);
    expect(listed[0]).toMatch(
      /^info: file-sync {2}sha256:[0-9a-f]{12}… {2}1 resource\n {2}file-sync\/notes {2}version \d+, generation 1 {2}settled/,
    );

    const got = await controller("get file-sync notes", /^/);
    expect(got[0]).toContain("Ready=True Synced");
    expect(got[0]).toContain(`spec: {"source":${JSON.stringify(source)}`);
    expect(got[0]).toContain("finalizers: file-sync/remove-target");

    writeFileSync(source, "# Notes\n\nmore\n");
    const again = await controller("reconcile file-sync notes", /observed|failing|blocked/);
    expect(again[0]).toBe("info: Reconcile requested for file-sync/notes");
    expect(again.at(-1)).toMatch(/^info: .*: settled/);
    expect(readFileSync(target, "utf8")).toBe("# Notes\n\nmore\n");

    const deleted = await controller("delete file-sync notes", /^info: Deleted/);
    expect(deleted[0]).toBe(
      "info: Deleting file-sync/notes: waiting for its finalizers (file-sync/remove-target)",
    );
    expect(deleted.at(-1)).toBe("info: Deleted file-sync/notes");
    expect(existsSync(target)).toBe(false);
  }, 240_000);

  it(
    "runs a controller's interactive child in the session it approved, then revokes it",
    async () => {
      const state = await pi.command({ type: "get_state" });
      const sessionId = (state.data as { sessionId: string }).sessionId;
      await controller('apply asker r1 {"topic": "apples"}', /^info: Created/);
      const [bound] = await controller("bind asker", /^info: Approved/);
      expect(bound).toMatch(
        /^info: Approved this session for asker's interactive child runs \(sbind[^;]*\); revoke with \/controller unbind asker$/,
      );
      // The extension sent its own session id; the host keeps it in the state only.
      const read = <T>(sql: string) =>
        withStore(sandbox.stateDir, (store) => queryAll<T>(store, sql));
      expect(read("SELECT session_id FROM controller_session_bindings WHERE revoked_at IS NULL"))
        .toEqual([{ session_id: sessionId }]);
      // The child's step is shown in this session, the model submits, the parent settles.
      const answered = await waitUntil(() => {
        const [row] = read<{ status_json: string }>(
          "SELECT status_json FROM controller_resources WHERE resource_key = 'r1'",
        );
        return row !== undefined &&
          JSON.parse(row.status_json).controllerStatus.child === "succeeded";
      }, 90_000);
      expect(answered, JSON.stringify(pi.records.slice(-5))).toBe(true);
      expect(model.requests.some((r) => r.lastUserText.includes("Give a number for apples")))
        .toBe(true);
      expect(read(
        "SELECT b.execution_mode, b.origin_session_id, r.state, r.output_json FROM " +
          "controller_workflow_requests w JOIN run_bindings b ON b.run_id = w.run_id JOIN runs r " +
          "ON r.run_id = w.run_id WHERE w.workflow = 'ask'",
      )).toEqual([{
        execution_mode: "interactive",
        origin_session_id: sessionId,
        state: "completed",
        output_json: expect.stringContaining('"n":7'),
      }]);
      // The session also shows the child's own completion notice: pick the command's answers.
      const answer = async (args: string, pattern: RegExp) =>
        (await controller(args, pattern)).find((line) => pattern.test(line))!;
      const listed = await answer("list asker", /^info: asker /);
      expect(listed).toContain("session binding sbind");
      expect(listed).not.toContain(sessionId);
      const unbound = await answer("unbind asker", /Revoked/);
      expect(unbound).toMatch(/^info: Revoked session binding sbind\S* of asker$/);
      const again = await answer("unbind asker", /^error/);
      expect(again).toMatch(/^error: \/controller: not found: .*no approved session binding/);
    },
    150_000,
  );

  it("refuses bad input in one line", async () => {
    const cases: [string, RegExp][] = [
      ["explode", /^error: Unknown \/controller action 'explode': use one of list, get/],
      ["get file-sync", /^error: Missing argument: \/controller get <controller> <key>$/],
      ["get File_Sync k", /^error: Invalid controller name/],
      ["apply file-sync k {oops", /^error: Invalid spec JSON: /],
      ["reconcile file-sync k --expect-version x", /^error: Invalid --expect-version/],
      ["get file-sync nothing-here", /^error: \/controller: not found: [^\n]*nothing-here/],
      ["apply no-such-controller k", /^error: \/controller: [^\n]*no-such-controller/],
    ];
    // A resource of an earlier test may announce its status at any moment: not an answer.
    const answer = /^(?!info: [\w.-]+\/\S+ \(version \d+, generation \d+\))/;
    for (const [args, pattern] of cases) {
      const [notice] = (await controller(args, answer)).filter((line) => answer.test(line));
      expect(notice, args).toMatch(pattern);
      expect(notice, args).not.toContain("\n");
      expect(notice, args).not.toMatch(/\bat .*\.ts:\d+/);
    }
    const spec = JSON.stringify({
      source: join(sandbox.root, "a"),
      target: join(sandbox.root, "b"),
    });
    writeFileSync(join(sandbox.root, "a"), "a");
    await controller(`apply file-sync stale ${spec}`, /observed|failing/);
    const [stale] = (await controller(`apply file-sync stale --expect-version 0 ${spec}`, answer))
      .filter((line) => answer.test(line));
    expect(stale).toMatch(/^error: \/controller: conflict: /);
    await controller("delete file-sync stale", /^info: Deleted/);
  }, 180_000);
});
