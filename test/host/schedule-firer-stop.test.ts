/**
 * A stopping host drops the retries of its failed settles: the in-process host of the test kit
 * (src/testing/kit-host.ts) leaves the process alive, and a retry armed before the stop ran on the
 * closed store, logged `schedule.settleFailed` after `host.stopped` and armed the next one.
 */
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { expect, it } from "vitest";
import { receiptOf } from "../../src/client/command-receipt.ts";
import { startKitHost } from "../../src/testing/kit-host.ts";
import { waitFor } from "../support/host.ts";

it("retries no failed settle after the host stopped", async () => {
  const kit = await startKitHost({ virtualClock: false });
  try {
    const ask = async (
      op: "schedule.add" | "schedule.pause" | "schedule.resume",
      payload: object,
    ) => receiptOf(op, await kit.connection.request(op, { payload } as never));
    await ask("schedule.add", {
      name: "tick",
      workflow: "builtin:echo",
      cwd: kit.root,
      every: "1s",
    });
    await ask("schedule.pause", { name: "tick" });
    // An input the settle cannot decode: it throws before the resolution, so it is retried.
    const db = new DatabaseSync(join(kit.stateDir, "state.sqlite"));
    try {
      db.exec("PRAGMA busy_timeout = 30000");
      db.exec("UPDATE schedules SET input_json = '{' WHERE name = 'tick'");
    } finally {
      db.close();
    }
    await ask("schedule.resume", { name: "tick" });
    await waitFor(
      () => /schedule\.settleFailed .*retry=true/.test(kit.log()),
      () => `a settle to fail and be retried: ${kit.log()}`,
      30_000,
      50,
    );
  } finally {
    await kit.close();
  }
  const lines = kit.log().split("\n");
  const stopped = lines.findIndex((l) => l.includes("host.stopped"));
  expect(stopped).toBeGreaterThan(0);
  // The last retry armed before the stop is due within its delay: a timer set now for longer
  // fires after it (Node runs expired timers in the order they are due).
  const attempts = lines.slice(0, stopped).flatMap((l) =>
    /settleFailed .*attempt=(\d+)/.exec(l) ?? []
  )
    .filter((_, i) => i % 2 === 1).map(Number);
  const last = Math.max(...attempts);
  await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** (last - 1) + 100));
  expect(kit.log().split("\n").slice(stopped + 1).filter(Boolean)).toEqual([]);
}, 60_000);
