/**
 * sanity-check and autoplan end to end: headless, the real Pi, the fake model, in a git
 * repository the test makes. sanity-check reviews a real diff with three read-only reviewers in
 * one agent group (each its own supervised Pi child, offered only read/grep/find/ls and the
 * workflow tool); one reviewer never submits and is reported without a verdict. autoplan's
 * rules reject an out-of-scope choice and an empty plan, and the corrected plan comes out ready.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../src/os/stop-group.ts";
import { closeStateStore } from "../../../src/state/store.ts";
import { queryAll } from "../../../src/state/statements.ts";
import { gate } from "../../support/headless-env.ts";
import { submitCall, updateContractIn } from "../../support/step-responder.ts";
import { type BuiltinEnv, createBuiltinEnv } from "./builtin-env.ts";

describe("review built-ins with the real Pi", () => {
  let h: BuiltinEnv;

  beforeAll(async () => {
    h = await createBuiltinEnv();
  });
  afterAll(async () => {
    await h?.close();
  });

  it("sanity-check: parallel reviewers, a failing one reported, verdicts in a final notification", async () => {
    h.write("src/sum.ts", "export const sum = (a: number, b: number) => a + b + 0;\n");
    h.write("src/extra.ts", "export const extra = 1;\n");
    h.decide = (request, contract) => {
      if (!contract?.step.startsWith("review.")) return undefined;
      const reviewer = contract.step.slice("review.".length);
      if (reviewer === "evidence") return { kind: "text", text: "I will not review this." };
      if (request.lastRole === "tool") {
        return request.lastToolResult?.startsWith("Update recorded")
          ? submitCall(contract, {
            verdict: reviewer === "simplicity" ? "simplify" : "keep",
            summary: `${reviewer} looked at sum.ts`,
            findings: reviewer === "simplicity"
              ? [{ verdict: "simplify", file: "src/sum.ts", note: "drop the + 0" }]
              : [],
          })
          : { kind: "text", text: "Done." };
      }
      const update = updateContractIn(request.lastUserText);
      return {
        kind: "tool",
        name: "workflow",
        args: {
          ...update,
          step: contract.step,
          attempt: contract.attempt,
          update: { type: "status", key: "reading", data: { file: "src/sum.ts" } },
        },
      };
    };
    const from = h.model.requests.length;
    const { code, run } = await h.start("sanity-check", {
      reviewers: 3,
      focus: "the sum helper",
      evidence: [{ id: "lint", command: "git", args: ["diff", "--check"] }],
    });
    expect(code).toBe(0);
    expect(run.state).toBe("completed");
    expect(run.output).toMatchObject({
      status: "reviewed",
      base: "HEAD",
      verdict: "simplify",
      counts: { keep: 1, simplify: 1, refactor: 0, drop: 0, needs_evidence: 0 },
      failedReviewers: [{ reviewer: "evidence" }],
    });
    expect(run.output.failedReviewers[0].error).toContain("ended its turn 3 times");
    expect(run.output.reviews.map((r: any) => r.reviewer).sort()).toEqual([
      "correctness",
      "simplicity",
    ]);

    // Each reviewer saw the diff (tracked and untracked) and only read-only tools.
    const reviewerRequests = h.model.requests.slice(from).filter((r) =>
      r.messages.some((m) => typeof m.content === "string" && m.content.includes("Your lens:")) ||
      JSON.stringify(r.messages).includes("Your lens:")
    );
    expect(reviewerRequests.length).toBeGreaterThanOrEqual(3);
    for (const r of reviewerRequests) {
      expect([...r.toolNames].sort()).toEqual(["find", "grep", "ls", "read", "workflow"]);
    }
    const first = JSON.stringify(reviewerRequests[0].messages);
    expect(first).toContain("a + b + 0");
    expect(first).toContain("src/extra.ts");
    expect(first).toContain("the sum helper");
    expect(first).toContain("Evidence lint");

    const status = await h.cliHereJson(["status", run.runId]);
    const notes = status.notifications.filter((n: any) => n.kind === "final");
    expect(notes).toHaveLength(1);
    expect(notes[0].message).toMatch(/^Sanity check: simplify\n/);
    expect(notes[0].message).toContain("simplify src/sum.ts: drop the + 0");
    expect(notes[0].message).toContain("evidence: no verdict");
    const keys = status.updates.map((u: any) => `${u.nodeId} ${u.type} ${u.key}`);
    expect(keys).toEqual(expect.arrayContaining([
      "review progress agents",
      "review status correctness.reading",
      "review status simplicity.reading",
    ]));
    const progress = status.updates.find((u: any) => u.key === "agents");
    expect(progress.data).toMatchObject({ completed: 3, total: 3, unit: "agents" });
    expect(await waitUntil(() => h.piProcesses().length === 0, 15_000)).toBe(true);
    h.git("checkout", "--", ".");
    h.git("clean", "-fdq");
  });

  it("sanity-check: every reviewer is a registered Pi group; cancel stops them all", async () => {
    h.write("src/sum.ts", "export const sum = (a: number, b: number) => b + a;\n");
    const hold = gate();
    h.decide = async (_request, contract) => {
      if (contract?.step.startsWith("review.")) await hold.promise;
      return undefined;
    };
    const started = await h.cli([
      "start",
      "sanity-check",
      "--input-json",
      '{"reviewers": 3}',
      "--cwd",
      h.sandbox.project,
      "--json",
    ]);
    const runId = JSON.parse(started.stdout).run.runId;
    const registered = () => {
      const store = h.openState();
      try {
        return queryAll<{ pid: number }>(
          store,
          "SELECT g.pid FROM worker_child_groups g JOIN run_workers w USING (worker_epoch) " +
            "WHERE w.run_id = :runId",
          { runId },
        ).map((r) => r.pid);
      } finally {
        closeStateStore(store);
      }
    };
    // Three reviewers at once, each a Pi child the host knows by PID.
    expect(await waitUntil(() => registered().length === 3, 60_000)).toBe(true);
    const pids = registered().sort();
    const live = h.piProcesses().map((p) => p.pid);
    expect(pids.every((pid) => live.includes(pid))).toBe(true);
    const cancelled = await h.cliHere(["cancel", runId]);
    expect(cancelled.code).toBe(0);
    expect(await waitUntil(() => h.piProcesses().length === 0, 20_000)).toBe(true);
    hold.open();
    const run = await h.waitForState(runId, "cancelled");
    expect(run.state).toBe("cancelled");
    expect(registered()).toEqual([]);
    h.git("checkout", "--", ".");
  });

  it("sanity-check: a clean tree has nothing to review and starts no agent", async () => {
    const from = h.model.requests.length;
    const { code, run } = await h.start("builtin:sanity-check", {});
    expect(code).toBe(0);
    expect(run.output).toEqual({ status: "nothingToReview", base: "HEAD" });
    expect(h.model.requests.length).toBe(from);
  });

  it("autoplan: an out-of-scope choice and an empty plan are rejected, the fixed plan is ready", async () => {
    const plan = {
      summary: "Add a subtract helper",
      steps: [{ title: "Add sub to src/sum.ts", detail: "export sub", files: ["src/sum.ts"] }],
      verification: ["npm test"],
      risks: ["none"],
    };
    h.decide = (request, contract) => {
      if (!contract) return undefined;
      const rejected = request.lastToolResult?.includes("Output rejected") ?? false;
      if (request.lastRole === "tool" && !rejected) return { kind: "text", text: "Submitted." };
      switch (contract.step) {
        case "frame":
          return submitCall(contract, {
            goal: "subtract numbers",
            inScope: ["src/sum.ts"],
            outOfScope: ["a calculator UI"],
            unknowns: [],
          });
        case "propose":
          return submitCall(contract, {
            options: [
              { id: "ui", summary: "build a calculator UI", inScope: false },
              { id: "helper", summary: "add sub() next to sum()", inScope: true },
            ],
          });
        case "choose":
          return submitCall(
            contract,
            rejected ? { status: "chosen", option: "helper" } : { status: "chosen", option: "ui" },
          );
        case "plan":
          return submitCall(contract, rejected ? plan : { ...plan, steps: [] });
      }
      return undefined;
    };
    const from = h.model.requests.length;
    const { code, run } = await h.start("autoplan", { task: "let users subtract numbers" });
    expect(code).toBe(0);
    expect(run.title).toBe("Plan: let users subtract numbers");
    expect(run.output).toEqual({
      status: "ready",
      task: "let users subtract numbers",
      option: { id: "helper", summary: "add sub() next to sum()", inScope: true },
      plan,
    });
    const results = h.model.requests.slice(from).map((r) => r.lastToolResult ?? "");
    expect(results.some((t) => t.includes('option "ui" is out of scope'))).toBe(true);
    expect(results.some((t) => t.includes('"steps" is empty'))).toBe(true);
  });

  it("autoplan: no workable option ends blocked", async () => {
    h.decide = (request, contract) => {
      if (!contract || request.lastRole === "tool") return undefined;
      if (contract.step === "choose") {
        return submitCall(contract, { status: "blocked", reason: "needs a product decision" });
      }
      if (contract.step === "propose") {
        return submitCall(contract, { options: [{ id: "a", summary: "x", inScope: false }] });
      }
      return submitCall(contract, { goal: "g", inScope: [], outOfScope: [], unknowns: ["all"] });
    };
    const { code, run } = await h.start("autoplan", { task: "redesign everything" });
    expect(code).toBe(0);
    expect(run.output).toEqual({
      status: "blocked",
      task: "redesign everything",
      reason: "needs a product decision",
    });
  });
});
