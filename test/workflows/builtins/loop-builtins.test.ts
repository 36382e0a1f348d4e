/**
 * monitor and autoimplement end to end: headless, the real Pi, the fake model, in a git
 * repository the test makes. monitor parks between checks with no worker (its wait is a human
 * decision the host's deadline timer would answer "check"); "check now" from the CLI starts the
 * next check at once, an action runs when the check asks for one, and it gives up at maxChecks.
 * autoimplement edits files through Pi's write tool, verifies with a command batch, fixes a
 * failure, runs its reviewers; a verification that keeps failing gives up at maxFixRounds, and a
 * run without a plan plans first through the included autoplan.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../src/os/stop-group.ts";
import type { FakeReply } from "../../support/fake-model.ts";
import { submitCall, type SubmitContract } from "../../support/step-responder.ts";
import { type BuiltinEnv, createBuiltinEnv } from "./builtin-env.ts";

const HAS_SUB = {
  id: "has-sub",
  command: "grep",
  args: ["-q", "export const sub =", "src/sum.ts"],
};
const PLAN = {
  summary: "Add sub()",
  steps: [{ title: "Add sub to src/sum.ts", detail: "", files: ["src/sum.ts"] }],
  verification: ["grep"],
  risks: [],
};

/** A model writing `content` (one per write, in order) to src/sum.ts before each submission. */
function implementer(contents: string[]) {
  let writes = 0;
  return (
    request: { lastRole: string; lastToolResult?: string },
    contract: SubmitContract,
    output: unknown,
  ): FakeReply | undefined => {
    if (request.lastToolResult?.startsWith("Output accepted")) return undefined;
    if (request.lastRole !== "tool") {
      const content = contents[Math.min(writes++, contents.length - 1)];
      return { kind: "tool", name: "write", args: { path: "src/sum.ts", content } };
    }
    return submitCall(contract, output);
  };
}

describe("loop built-ins with the real Pi", () => {
  let h: BuiltinEnv;

  beforeAll(async () => {
    h = await createBuiltinEnv();
  });
  afterAll(async () => {
    await h?.close();
  });

  it("monitor: parks between checks with no worker, acts when asked, gives up at maxChecks", async () => {
    let checks = 0;
    h.decide = (request, contract) => {
      if (!contract || request.lastRole === "tool") return undefined;
      if (contract.step === "observe") {
        checks++;
        return submitCall(contract, {
          summary: `CI still red (${checks})`,
          stopConditionMet: false,
          action: checks === 2 ? "re-run the flaky job" : null,
        });
      }
      if (contract.step === "act") return submitCall(contract, { done: "re-ran the job" });
      return undefined;
    };
    const { code, run } = await h.start("monitor", {
      task: "watch CI",
      stopWhen: "CI is green",
      everyMinutes: 30,
      maxChecks: 2,
    });
    expect(code).toBe(7);
    expect(run.state).toBe("waiting");
    // Parked: the host runs, but no worker and no Pi wait for the next check.
    expect(
      await waitUntil(
        () =>
          h.processes().every((p) => !p.argv.includes("worker")) && h.piProcesses().length === 0,
        15_000,
      ),
    )
      .toBe(true);
    const status = await h.cliHere(["status", run.runId]);
    expect(status.stdout).toContain("Monitor: next check in 30 min");
    const now = await h.cliHere(["answer", run.runId, "--choice", "check"]);
    expect(now.code).toBe(0);
    const done = await h.waitForState(run.runId, "completed");
    expect(done.output).toMatchObject({ status: "gaveUp", checks: 2 });
    const full = await h.cliHereJson(["status", run.runId]);
    const messages = full.notifications.map((n: any) => `${n.kind}: ${n.message}`);
    expect(messages).toEqual(expect.arrayContaining([
      "progress: Monitor check 1/2: CI still red (1)",
      "progress: Monitor check 2/2: CI still red (2)\nDid: re-ran the job",
      'final: Monitor gave up after 2 checks without "CI is green": CI still red (2)',
    ]));
  });

  it("monitor: stops at the first check that meets stopWhen", async () => {
    h.decide = (request, contract) =>
      contract?.step === "observe" && request.lastRole !== "tool"
        ? submitCall(contract, { summary: "green", stopConditionMet: true, action: null })
        : undefined;
    const { code, run } = await h.start("monitor", "watch CI");
    expect(code).toBe(0);
    expect(run.output).toMatchObject({ status: "done", checks: 1 });
  });

  it("autoimplement: implements, fixes a failed verification, fixes review findings, never commits", async () => {
    const write = implementer([
      "export const sum = (a: number, b: number) => a + b;\nexport const subtract = 1;\n",
      "export const sum = (a: number, b: number) => a + b;\nexport const sub = (a: number, b: number) => a - b;\n",
    ]);
    let simplicityReviews = 0;
    h.decide = (request, contract) => {
      if (!contract) return undefined;
      if (contract.step === "implement") {
        return write(request, contract, { summary: "added subtract", changed: ["src/sum.ts"] });
      }
      if (contract.step === "fix") return write(request, contract, { summary: "fixed" });
      if (contract.step.startsWith("review.") && request.lastRole !== "tool") {
        const first = contract.step === "review.simplicity" && ++simplicityReviews === 1;
        return submitCall(contract, {
          verdict: first ? "simplify" : "keep",
          summary: first ? "inline the helper" : "fine",
          findings: first ? [{ verdict: "simplify", file: "src/sum.ts", note: "inline it" }] : [],
        });
      }
      return undefined;
    };
    const head = h.git("rev-parse", "HEAD");
    const from = h.model.requests.length;
    const { code, run } = await h.start("autoimplement", {
      task: "add sub()",
      plan: PLAN,
      verify: [HAS_SUB],
      maxFixRounds: 3,
      maxReviewRounds: 2,
      reviewers: 2,
    });
    expect(code).toBe(0);
    expect(run.output).toMatchObject({
      status: "implemented",
      summary: "added subtract",
      fixRounds: 2,
      verification: [{ id: "has-sub", outcome: "succeeded", exitCode: 0 }],
      review: { verdict: "keep", findings: [], failedReviewers: [], addressedAfterReview: false },
    });
    expect(readFileSync(join(h.sandbox.project, "src/sum.ts"), "utf8")).toContain(
      "export const sub =",
    );
    expect(h.git("rev-parse", "HEAD")).toBe(head);
    const status = await h.cliHereJson(["status", run.runId]);
    const steps = status.attempts.map((a: any) => a.nodeId);
    expect(steps).toEqual([
      "start",
      "implement",
      "verify",
      "checked",
      "fix",
      "verify",
      "checked",
      "diff",
      "review",
      "triage",
      "fix",
      "verify",
      "checked",
      "diff",
      "review",
      "triage",
      "announce",
      "done",
    ]);
    // The first fix saw the failing command, the second the reviewer's finding.
    const fixPrompts = h.model.requests.slice(from).map((r) => r.lastUserText).filter((t) =>
      t.includes("Fix round")
    );
    expect(fixPrompts[0]).toContain(
      "Verification failed:\n`grep -q export const sub = src/sum.ts` failed",
    );
    expect(fixPrompts.at(-1)).toContain("simplify src/sum.ts: inline it");
    h.git("checkout", "--", ".");
  });

  it("autoimplement: plans through autoplan, then gives up when verification keeps failing", async () => {
    const write = implementer(["export const nothing = 0;\n"]);
    h.decide = (request, contract) => {
      if (!contract) return undefined;
      const fresh = request.lastRole !== "tool";
      switch (contract.step) {
        case "plan/frame":
          return fresh
            ? submitCall(contract, { goal: "sub", inScope: [], outOfScope: [], unknowns: [] })
            : undefined;
        case "plan/propose":
          return fresh
            ? submitCall(contract, { options: [{ id: "a", summary: "add it", inScope: true }] })
            : undefined;
        case "plan/choose":
          return fresh ? submitCall(contract, { status: "chosen", option: "a" }) : undefined;
        case "plan/plan":
          return fresh ? submitCall(contract, PLAN) : undefined;
        case "implement":
          return write(request, contract, { summary: "tried" });
        case "fix":
          return write(request, contract, { summary: "tried again" });
      }
      return undefined;
    };
    const { code, run } = await h.start("autoimplement", {
      task: "add sub()",
      verify: [HAS_SUB],
      maxFixRounds: 1,
    });
    expect(code).toBe(0);
    expect(run.output).toMatchObject({
      status: "gaveUp",
      fixRounds: 1,
      failing: [{ id: "has-sub", outcome: "failed", exitCode: 1 }],
    });
    const status = await h.cliHereJson(["status", run.runId]);
    const nodes = status.attempts.map((a: any) => a.nodeId);
    expect(nodes.slice(0, 5)).toEqual([
      "start",
      "plan/frame",
      "plan/propose",
      "plan/choose",
      "plan/plan",
    ]);
    expect(nodes.filter((n: string) => n === "fix")).toHaveLength(1);
    expect(nodes.at(-1)).toBe("gaveUp");
    const final = status.notifications.find((n: any) => n.kind === "final");
    expect(final.message).toContain("autoimplement gave up after 1 fix rounds");
    h.git("checkout", "--", ".");
  });
});
