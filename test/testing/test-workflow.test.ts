/**
 * The test kit catches what it promises, on the real host, engine and workers: scripted model
 * outputs go through the step's real `validate`, a missing answer fails with the step's prompt,
 * a seven-day wait passes in well under a real second, scripted results replace actions, and
 * `crash: "every-boundary"` reports an unmanaged side effect that a recovery applied twice.
 */
import { existsSync, mkdtempSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  CrashBoundaryError,
  MissingAnswerError,
  testWorkflow,
  timeOut,
} from "../../src/testing/index.ts";
import { removeTempRoot } from "../support/temp-root.ts";
import { compute, defineWorkflow } from "../../mod.ts";
import weekWait from "./fixtures/week-wait.workflow.ts";

const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url);
const example = (name: string) => new URL(`../../examples/${name}`, import.meta.url);
const roots: string[] = [];
const tempProject = () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "piw-kit-project-")));
  roots.push(dir);
  return dir;
};

afterAll(async () => {
  for (const root of roots) await removeTempRoot(root);
});

describe("testWorkflow", () => {
  it("submits scripted outputs through the step's real validate, a rejected one first", async () => {
    const prompts: string[] = [];
    const result = await testWorkflow(example("two-turn-agent.workflow.ts"), {
      input: { task: "add a README" },
      answers: {
        draft: [{ steps: "not a list" }, { steps: ["write it", "commit it"] }],
        review: (prompt, ask) => {
          prompts.push(prompt);
          return { risk: `none at submission ${ask.submission}`, ok: true };
        },
      },
    });
    expect(result.state).toBe("completed");
    expect(result.outputs.draft).toEqual({ steps: ["write it", "commit it"] });
    expect(result.output).toEqual({
      plan: { steps: ["write it", "commit it"] },
      review: { risk: "none at submission 1", ok: true },
    });
    expect(prompts[0]).toContain("Review this plan");
    expect(result.attempts.map((a) => [a.nodeId, a.state])).toEqual([
      ["draft", "ok"],
      ["review", "ok"],
      ["summary", "ok"],
    ]);
    expect(result.events.at(-1)?.type).toBe("run.completed");
  });

  it("fails a step with no scripted answer, naming it and printing its prompt", async () => {
    const error = await testWorkflow(example("two-turn-agent.workflow.ts"), {
      input: { task: "add a README" },
      answers: { draft: { steps: ["one"] } },
    }).catch((e) => e);
    expect(error).toBeInstanceOf(MissingAnswerError);
    expect(error.step).toBe("review");
    expect(error.message).toContain('step "review" asked the model, and answers has no "review"');
    expect(error.message).toContain(
      'Review this plan and name its biggest risk:\n{"steps":["one"]}',
    );
  });

  it("lets a seven-day wait time out in well under a real second", async () => {
    const result = await testWorkflow(fixture("week-wait.workflow.ts"), {
      human: { ask: timeOut },
    });
    expect(result.state).toBe("completed");
    expect(result.output).toEqual({ shipped: false });
    const at = (type: string) => result.events.find((e) => e.type === type)!.at;
    // Event times are virtual: real time between them is the gap minus the jump.
    const realMs = at("node.timed_out") - at("run.waiting") - result.skippedMs;
    expect(result.skippedMs).toBeGreaterThan(7 * 24 * 60 * 60_000 - 60_000);
    expect(realMs).toBeGreaterThanOrEqual(0);
    expect(realMs).toBeLessThan(1_000);
  });

  it("stops at an unanswered checkpoint and says what it asks", async () => {
    const result = await testWorkflow(fixture("week-wait.workflow.ts"));
    expect(result.state).toBe("waiting");
    expect(result.waiting).toMatchObject({ kind: "checkpoint", nodeId: "ask" });
  });

  it("refuses an answers or human key naming no node, or a node of a kind it does not script", async () => {
    // Without the check each of these was ignored: the test ended waiting, or ran the real node.
    await expect(testWorkflow(fixture("week-wait.workflow.ts"), { human: { aks: timeOut } }))
      .rejects.toThrow(
        'testWorkflow: human has "aks", which is not a node of workflow "week-wait"; human ' +
          "answers its checkpoints and human decisions: ask",
      );
    await expect(testWorkflow(fixture("deploy.workflow.ts"), { human: { deploy: "ok" } }))
      .rejects.toThrow(
        'testWorkflow: human has "deploy", an action node of workflow "deploy"; human answers ' +
          "its checkpoints and human decisions: it has none",
      );
    await expect(
      testWorkflow(fixture("week-wait.workflow.ts"), {
        answers: { expired: { shipped: true } },
        human: { ask: timeOut },
      }),
    ).rejects.toThrow(
      'testWorkflow: answers has "expired", a compute node of workflow "week-wait"; answers ' +
        "scripts its model steps (agent, decision, assistantMessage), actions and shell nodes: " +
        "it has none",
    );
  });

  it("takes a definition imported from its file, and refuses one made inline", async () => {
    const result = await testWorkflow(weekWait);
    expect(result.state).toBe("waiting");
    const inline = defineWorkflow({
      name: "inline",
      startAt: "a",
      nodes: { a: compute({ run: () => ({}) }) },
      edges: [],
    });
    await expect(testWorkflow(inline)).rejects.toThrow(
      /does not export it as its default: define workflow "inline" as the default export/,
    );
  });

  it("runs actions in the project directory unless given a scripted result", async () => {
    const real = tempProject();
    const ran = await testWorkflow(fixture("deploy.workflow.ts"), {
      projectDir: real,
      answers: { review: { healthy: true } },
    });
    expect([ran.state, ran.outputs.deploy]).toEqual(["completed", { deployed: "v1" }]);
    expect(readFileSync(join(real, "deployed.txt"), "utf8")).toBe("v1\n");

    const scripted = tempProject();
    const skipped = await testWorkflow(fixture("deploy.workflow.ts"), {
      projectDir: scripted,
      answers: { deploy: { deployed: "v0 (scripted)" }, review: { healthy: false } },
    });
    expect(skipped.outputs.deploy).toEqual({ deployed: "v0 (scripted)" });
    expect(existsSync(join(scripted, "deployed.txt"))).toBe(false);
  });

  it("reports the boundary where a crash made an unmanaged side effect apply twice", async () => {
    const error = await testWorkflow(fixture("side-effect.workflow.ts"), {
      crash: "every-boundary",
    }).catch((e) => e);
    expect(error).toBeInstanceOf(CrashBoundaryError);
    const differs = error.report.boundaries.filter((b: { outcome: string }) =>
      b.outcome === "differs"
    );
    expect(differs.map((b: { boundary: string }) => b.boundary)).toContain(
      "worker.node.finished.beforeSend#1",
    );
    expect(error.message).toContain(
      'worker.node.finished.beforeSend#1: file ledger.txt differs: "charged\\ncharged\\n", expected "charged\\n"',
    );
    // Boundaries past the commit of the node's outcome recover without running it again.
    const after = error.report.boundaries.find((b: { boundary: string }) =>
      b.boundary === "worker.run.finished.beforeSend#1"
    );
    expect(after?.outcome).toBe("same");
  });
});
