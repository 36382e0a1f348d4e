/**
 * The kit's `test()` under vitest registers a vitest test (a `*.workflow.test.ts` file written for
 * `pi-workflows test` also runs when a project's vitest includes it).
 */
import { expect, it } from "vitest";
import { test } from "../../src/testing/index.ts";

const ran: string[] = [];

test("registered through the kit", () => {
  ran.push("kit");
});

it("runs after the kit's test, which vitest ran as its own", () => {
  expect(ran).toEqual(["kit"]);
});
