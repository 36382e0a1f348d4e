/**
 * The prune's candidate read walks the end-time index over the runs past the period, never every
 * ended run: at 100,000 ended runs the plan SQLite chose by itself (the state index and a sort of
 * all of them) held the host's event loop 128 ms for one page.
 */
import { afterEach, expect, it } from "vitest";
import { queryAllArgs } from "../../src/state/statements.ts";
import { PRUNE_CANDIDATES_SQL } from "../../src/state/retention/prune-phase.ts";
import { type Fixture, openFixture } from "../support/state-store.ts";

let fx: Fixture | undefined;
afterEach(() => fx?.close());

it("lists prune candidates through runs_by_finished, bounded by the cutoff, without a sort", () => {
  fx = openFixture();
  const plan = queryAllArgs<{ detail: string }>(
    fx.store,
    `EXPLAIN QUERY PLAN ${PRUNE_CANDIDATES_SQL}`,
    0,
    0,
    Date.now(),
    256,
  ).map((row) => row.detail);
  expect(plan[0]).toMatch(
    /^SEARCH r USING INDEX runs_by_finished \(finished_at>\? AND finished_at<\?\)/,
  );
  expect(plan.join("\n")).not.toMatch(/TEMP B-TREE|SCAN r\b/);
});
