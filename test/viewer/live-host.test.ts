/**
 * The refresh loop against a live host running real workflows: the viewer's read-only store
 * follows runs as the host commits them (queued, running, waiting at a human decision,
 * completed), draws their graphs from the stored definition, and `view --once` prints the same
 * from a separate process. The host is stopped by PID at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { closeStateStore, openStateStore, type StateStore } from "../../src/state/store.ts";
import { plainLines } from "../../src/render/mod.ts";
import { compose } from "../../src/viewer/compose.ts";
import { initialUi } from "../../src/viewer/ui-state.ts";
import { createViewerData, refreshViewerData, watchRun } from "../../src/viewer/viewer-data.ts";
import {
  type CliProcess,
  runCliProcess,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../support/host.ts";

let home: TempHome;
let host: CliProcess;
let store: StateStore;

beforeAll(async () => {
  home = tempHome();
  host = await startHostProcess(home.env);
  store = openStateStore({
    stateDir: home.stateDir,
    clock: systemClock,
    ids: randomIds,
    readOnly: true,
  });
});

afterAll(async () => {
  closeStateStore(store);
  await stopProcess(host);
  await home.cleanup();
});

async function start(args: string[]): Promise<string> {
  const r = await runCliProcess(["start", ...args, "--json"], home.env, 30_000);
  expect(r.stderr).toBe("");
  return JSON.parse(r.stdout).run.runId;
}

describe("viewer refresh loop on a live host", () => {
  it("follows runs through their states and draws them", async () => {
    const data = createViewerData(store, { all: true });
    refreshViewerData(data);
    const loop = await start(["examples/loop.workflow.ts", "--input-json", '{"times":3}']);
    watchRun(data, loop);
    await waitFor(
      () => {
        refreshViewerData(data);
        return data.watched?.row?.state === "completed";
      },
      "the loop run to complete in the viewer",
      30_000,
    );
    expect(data.watched!.attempts.map((a) => a.nodeId)).toEqual(["tick", "tick", "tick", "finish"]);
    expect(data.watched!.graph?.nodes.map((n) => n.id).sort()).toEqual(["finish", "tick"]);
    const ui = { ...initialUi({ runId: loop }), position: 2 };
    const text = plainLines([...compose(data, ui, 100, 40, Date.now()).body]).join("\n");
    expect(text, text).toContain("✓ ok ↻ 2");
    expect(text, text).toContain("false");

    const decision = await start(["examples/human-decision.workflow.ts"]);
    await waitFor(
      () => {
        refreshViewerData(data);
        return data.runs.find((r) => r.runId === decision)?.state === "waiting";
      },
      "the decision run to wait in the runs list",
      30_000,
    );
    watchRun(data, decision);
    refreshViewerData(data);
    const waiting = plainLines(
      compose(data, initialUi({ runId: decision }), 100, 40, Date.now()).body,
    )
      .join("\n");
    expect(waiting, waiting).toContain("⏸ waiting");
    expect(waiting, waiting).toContain("human decision: pending");
    expect(waiting, waiting).toContain("Release 1.0.0?");

    const once = await runCliProcess(["view", "--once", "--all"], home.env);
    expect(once.code).toBe(0);
    expect(once.stdout).toContain("pi-workflows runs · all (2)");
    expect(once.stdout).toMatch(/⏸ waiting\s+run-[0-9a-f]{8} human-decision/);
    expect(once.stdout).toMatch(/✓ completed run-[0-9a-f]{8} loop/);
    expect(once.stdout).not.toContain(home.root);
    const one = await runCliProcess(["view", loop, "--once"], home.env);
    expect(one.stdout).toContain("loop");
    expect(one.stdout).toContain("step 4: finish");
    expect(one.stdout).not.toContain("\x1b[");
  });
});
