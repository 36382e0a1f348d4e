import { describe, expect, it } from "vitest";
import { action, defineWorkflow } from "../../mod.ts";
import { checkUpdate, compileWorkflow, estimateProgress } from "../../src/workflows/index.ts";
import { DeadlineClock, runWorkflow } from "../support/workflows.ts";

describe("checkUpdate()", () => {
  it("accepts a well-formed update and normalizes its data to JSON", () => {
    expect(checkUpdate({ type: "log.line", key: "k", data: { a: undefined, b: [1] } })).toEqual({
      type: "log.line",
      key: "k",
      data: { b: [1] },
    });
    expect(() => checkUpdate(null)).toThrow("Update rejected: expected {type, key, data}");
    expect(() => checkUpdate({ type: "x", key: "k", data: () => 1 })).toThrow(/data is not JSON/);
    expect(() => checkUpdate({ type: "x", key: "k".repeat(129), data: 1 })).toThrow(
      /1-128 characters/,
    );
  });
});

describe("estimateProgress()", () => {
  it("derives rate, ETA and fraction from progress samples", () => {
    expect(estimateProgress([])).toEqual({ ratePerSecond: null, etaMs: null, fraction: null });
    expect(estimateProgress([{ at: 0, completed: 2, total: 10 }])).toEqual({
      ratePerSecond: null,
      etaMs: null,
      fraction: 0.2,
    });
    expect(estimateProgress([
      { at: 0, completed: 0, total: 10 },
      { at: 2000, completed: 4, total: 10 },
    ])).toEqual({ ratePerSecond: 2, etaMs: 3000, fraction: 0.4 });
    expect(estimateProgress([{ at: 0, completed: 1 }, { at: 1000, completed: 3 }])).toEqual({
      ratePerSecond: 2,
      etaMs: null,
      fraction: null,
    });
  });
});

describe("engine harness: updates", () => {
  it("passes checked updates through and rejects bad ones with clear errors", async () => {
    const seen: string[] = [];
    const wf = compileWorkflow(defineWorkflow({
      name: "up",
      startAt: "work",
      nodes: {
        work: action({
          run: ({ publishUpdate }) => {
            publishUpdate({
              type: "progress",
              key: "files",
              data: { schema: "pi-workflows.progress.v1", completed: 1, total: 4, unit: "file" },
            });
            for (
              const bad of [
                { type: "Bad", key: "k", data: 1 },
                { type: "log", key: "", data: 1 },
                { type: "log", key: "k", data: "x".repeat(70_000) },
                { type: "progress", key: "k", data: { completed: -1 } },
              ]
            ) {
              try {
                publishUpdate(bad);
              } catch (error) {
                seen.push((error as Error).message);
              }
            }
            return "ok";
          },
        }),
      },
    }));
    const run = await runWorkflow(wf);
    expect(run.updates).toEqual([{
      nodeId: "work",
      type: "progress",
      key: "files",
      data: { schema: "pi-workflows.progress.v1", completed: 1, total: 4, unit: "file" },
    }]);
    expect(seen).toEqual([
      "Update rejected: type must match /^[a-z][a-z0-9.-]{0,63}$/",
      "Update rejected: key must be 1-128 characters",
      "Update rejected: data is over 64 KiB",
      expect.stringMatching(/^Update rejected: progress data must be/),
    ]);
  });

  it("rate limits to a burst of 100, refilling at 20 per second of clock time", async () => {
    const clock = new DeadlineClock();
    let accepted = 0;
    let rejected = 0;
    const wf = compileWorkflow(defineWorkflow({
      name: "rate",
      startAt: "work",
      nodes: {
        work: action({
          run: ({ publishUpdate }) => {
            const burst = () => {
              for (let i = 0; i < 150; i++) {
                try {
                  publishUpdate({ type: "log", key: "line", data: i });
                  accepted++;
                } catch {
                  rejected++;
                }
              }
            };
            burst();
            clock.advance(1000);
            burst();
            return null;
          },
        }),
      },
    }));
    await runWorkflow(wf, { clock });
    expect(accepted).toBe(120);
    expect(rejected).toBe(180);
  });
});
