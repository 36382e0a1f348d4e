/**
 * The extension's incremental view of its messages on the session branch (branch-index.ts),
 * against Pi 1.6.0's own session manager: the same entries and step usage as a read of the whole
 * branch, after appends, a `/tree` move and a reset, while a look after a handoff reads only the
 * entries appended since the last one (no copy of the whole branch, which a long session's look
 * used to make several times a step).
 */
import { describe, expect, it } from "vitest";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { BranchIndex } from "../../src/extension/branch-index.ts";
import { stepUsageOnBranch } from "../../src/extension/branch-usage.ts";
import type { PiSessionManager } from "../../src/extension/pi-api.ts";
import {
  findStepEntry,
  isOurEntry,
  MESSAGE_DETAILS_SCHEMA,
  MESSAGE_TYPE,
} from "../../src/extension/session-messages.ts";
import {
  addUsage,
  EMPTY_USAGE,
  type StepUsage,
  usageOfPiMessage,
} from "../../src/protocol/step-usage.ts";

function session() {
  const manager = SessionManager.inMemory("/tmp");
  const counts = { branch: 0, entry: 0 };
  const view: PiSessionManager = {
    getSessionId: () => manager.getSessionId(),
    getBranch: () => {
      counts.branch++;
      return manager.getBranch();
    },
    getLeafId: () => manager.getLeafId(),
    getEntry: (id) => {
      counts.entry++;
      return manager.getEntry(id);
    },
  };
  return { manager, view, counts };
}

function step(manager: SessionManager, interactionId: string, presentationId = "p1"): string {
  return manager.appendCustomMessageEntry(MESSAGE_TYPE, `Do ${interactionId}`, true, {
    schema: MESSAGE_DETAILS_SCHEMA,
    kind: "step",
    runId: "run-1",
    interactionId,
    presentationId,
  });
}

function reply(manager: SessionManager, input: number, cost: number): string {
  return manager.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: "ok" }],
    api: "openai-completions",
    provider: "fake",
    model: "fake-model",
    usage: {
      input,
      output: 3,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: input + 3,
      cost: { input: cost, output: 0, cacheRead: 0, cacheWrite: 0, total: cost },
    },
    stopReason: "stop",
    timestamp: Date.now(),
  });
}

function user(manager: SessionManager, text: string): string {
  return manager.appendMessage({ role: "user", content: text, timestamp: Date.now() });
}

/** What the extension read before: the first step entry, then every message after it. */
function wholeBranchUsage(manager: SessionManager, interactionId: string): StepUsage | undefined {
  const branch = manager.getBranch();
  const shown = branch.findIndex((entry) =>
    isOurEntry(entry) && entry.details.kind === "step" &&
    entry.details.interactionId === interactionId
  );
  if (shown === -1) return undefined;
  let total: StepUsage | undefined;
  for (const entry of branch.slice(shown + 1)) {
    const usage = entry.type === "message" ? usageOfPiMessage(entry.message) : null;
    if (usage !== null) total = addUsage(total ?? EMPTY_USAGE, usage);
  }
  return total;
}

describe("BranchIndex", () => {
  it("matches a whole-branch read after appends, a /tree move and a reset", () => {
    const { manager, view } = session();
    const index = new BranchIndex(() => view);
    expect(index.ours()).toEqual([]);
    user(manager, "hello");
    const first = step(manager, "i-1");
    reply(manager, 10, 0.1);
    expect(index.ours().map((e) => e.id)).toEqual([first]);
    const second = step(manager, "i-2");
    reply(manager, 20, 0.2);
    reply(manager, 30, 0.7);
    const ours = () => manager.getBranch().filter(isOurEntry).map((e) => e.id);
    expect(index.ours().map((e) => e.id)).toEqual(ours());
    expect(stepUsageOnBranch(index, "i-2")).toEqual(wholeBranchUsage(manager, "i-2"));
    expect(stepUsageOnBranch(index, "i-1")).toEqual(wholeBranchUsage(manager, "i-1"));
    expect(stepUsageOnBranch(index, "i-1")?.input).toBe(60);
    expect(stepUsageOnBranch(index, "i-9")).toBeUndefined();

    // A /tree move back to before the second step: it is no longer on the branch.
    manager.branch(first);
    expect(index.ours().map((e) => e.id)).toEqual([first]);
    expect(stepUsageOnBranch(index, "i-2")).toBeUndefined();
    const again = step(manager, "i-2", "p2");
    reply(manager, 5, 0);
    expect(index.ours().map((e) => e.id)).toEqual([first, again]);
    expect(findStepEntry(index.ours(), "i-2")?.id).toBe(again);
    expect(findStepEntry(index.ours(), "i-2", "p1")).toBeUndefined();
    expect(stepUsageOnBranch(index, "i-2")).toEqual(wholeBranchUsage(manager, "i-2"));
    expect(stepUsageOnBranch(index, "i-1")).toEqual(wholeBranchUsage(manager, "i-1"));

    manager.resetLeaf();
    expect(index.ours()).toEqual([]);
    expect(second).not.toBe(again);
  });

  it("reads only what a handoff appended, however long the session", () => {
    const { manager, view, counts } = session();
    const index = new BranchIndex(() => view);
    for (let i = 0; i < 2_000; i++) user(manager, `earlier ${i}`);
    const shown = step(manager, "i-1");
    expect(findStepEntry(index.ours(), "i-1")?.id).toBe(shown);
    for (let handoff = 2; handoff <= 20; handoff++) {
      reply(manager, 10, 0.01);
      const next = step(manager, `i-${handoff}`);
      reply(manager, 10, 0.01);
      counts.branch = counts.entry = 0;
      // A handoff's looks: the entry a submit carries, the step's usage, the next step's.
      expect(findStepEntry(index.ours(), `i-${handoff}`)?.id).toBe(next);
      expect(stepUsageOnBranch(index, `i-${handoff}`)?.input).toBe(10);
      expect(findStepEntry(index.ours(), `i-${handoff + 1}`)).toBeUndefined();
      expect(counts.branch).toBe(0);
      expect(counts.entry).toBeLessThanOrEqual(6);
    }
  });
});
