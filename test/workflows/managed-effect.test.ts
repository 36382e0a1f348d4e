import { describe, expect, it } from "vitest";
import { action, compute, defineWorkflow, shell } from "../../mod.ts";
import { compileWorkflow, decideNext } from "../../src/workflows/index.ts";
import { MemoryEffects, runWorkflow } from "../support/workflows.ts";

describe("managed effects", () => {
  it("reserves, applies once and adopts the receipt when the same effect comes again", async () => {
    let applied = 0;
    const wf = compileWorkflow(defineWorkflow({
      name: "pay",
      startAt: "charge",
      nodes: {
        charge: action({
          effect: { type: "payment", key: ({ input }) => `order-${input.order}` },
          run: () => ({ chargeId: `ch-${++applied}` }),
        }),
        again: compute({ run: ({ state }) => ({ loop: state.visit < 2 }) }),
        done: compute({ run: ({ outputs }) => outputs.charge }),
      },
      edges: [
        { from: "charge", to: "again" },
        { from: "again", switch: { on: "$.loop", cases: { true: "charge", false: "done" } } },
      ],
    }));
    const effects = new MemoryEffects();
    const run = await runWorkflow(wf, { input: { order: 7 }, effects });
    expect(applied).toBe(1);
    expect(run.last).toMatchObject({ kind: "complete", output: { chargeId: "ch-1" } });
    expect([...effects.records.values()]).toMatchObject([{
      state: "applied",
      receipt: { chargeId: "ch-1" },
    }]);
  });

  it("a read-back check that finds the effect applied skips running it", async () => {
    let ran = false;
    const wf = compileWorkflow(defineWorkflow({
      name: "rb",
      startAt: "tag",
      nodes: {
        tag: shell({
          effect: { key: () => "tag-v1", observe: () => ({ existing: "v1" }) },
          exec: () => {
            ran = true;
            return { command: "true" };
          },
        }),
      },
    }));
    const run = await runWorkflow(wf, { effects: new MemoryEffects() });
    expect(ran).toBe(true); // exec only builds the command; the command itself never ran
    expect(run.last).toMatchObject({ kind: "complete", output: { existing: "v1" } });
  });

  it("settles a failed effect as rejected, and a rejected key fails later attempts", async () => {
    const effects = new MemoryEffects();
    const wf = compileWorkflow(defineWorkflow({
      name: "rej",
      startAt: "send",
      nodes: {
        send: action({
          effect: { key: () => "mail-1" },
          run: () => {
            throw new Error("SMTP refused");
          },
        }),
      },
    }));
    expect((await runWorkflow(wf, { effects })).last).toMatchObject({
      error: { code: "nodeFailed", message: "SMTP refused" },
    });
    expect([...effects.records.values()][0].state).toBe("rejected");
    expect((await runWorkflow(wf, { effects })).last).toMatchObject({
      error: { code: "effectRejected" },
    });
  });

  it("an interrupted node with a managed effect runs again; without one it blocks", async () => {
    const make = (managed: boolean) =>
      compileWorkflow(defineWorkflow({
        name: "crash",
        startAt: "deploy",
        nodes: {
          deploy: shell({
            ...(managed ? { effect: { key: () => "deploy-1" } } : {}),
            exec: () => ({ command: "true" }),
          }),
        },
      }));
    for (const managed of [true, false]) {
      const wf = make(managed);
      const crashed = await runWorkflow(wf, { crashAt: { nodeId: "deploy", visit: 1 } });
      crashed.facts.attempts[0].state = "interrupted";
      expect(decideNext(wf, crashed.facts).kind).toBe(managed ? "startNode" : "blocked");
    }
  });

  it("rejects a malformed effect declaration and a bad key at run time", async () => {
    expect(() =>
      defineWorkflow({
        name: "bad",
        startAt: "a",
        nodes: { a: action({ run: () => 1, effect: { type: "Bad Type", key: () => "k" } }) },
      })
    ).toThrow(/nodes\.a\.effect\.type: expected a lowercase effect type/);
    const wf = compileWorkflow(defineWorkflow({
      name: "k",
      startAt: "a",
      nodes: { a: action({ run: () => 1, effect: { key: () => "" } }) },
    }));
    expect((await runWorkflow(wf, { effects: new MemoryEffects() })).last).toMatchObject({
      error: {
        code: "effectKeyFailed",
        message: "Effect key must be a string of 1-1000 characters",
      },
    });
  });
});
