import { describe, expect, it } from "vitest";
import { SubmitWindow } from "../../src/extension/submit-window.ts";
import { callsWorkflowSubmit, isAssistantMessage } from "../../src/extension/message-events.ts";

describe("the submit window (pushes while a submit is in flight)", () => {
  it("holds a push during a submit and claims after it only when the push was newer", () => {
    const window = new SubmitWindow();
    expect(window.hold(5)).toBe(false); // no submit in flight: claim now
    const leave = window.enter("i-1");
    expect(window.has("i-1")).toBe(true);
    expect(window.hold(7)).toBe(true);
    expect(window.hold(6)).toBe(true);
    window.learn(7); // the answer named a step claimed at cursor 7
    expect(leave()).toBe(false); // the held push (7) is no news
    expect(window.has("i-1")).toBe(false);
    expect(window.known(7)).toBe(true);
    expect(window.known(8)).toBe(false);

    const again = window.enter("i-2");
    expect(window.hold(9)).toBe(true);
    window.learn(8);
    expect(again()).toBe(true); // newer than the answer: claim
  });

  it("claims after a submit for a held tick, a failed submit, and the last of overlapping calls", () => {
    const window = new SubmitWindow();
    const first = window.enter("i-1");
    const second = window.enter("i-1");
    window.hold(undefined); // the tick carries no cursor
    window.hold(3);
    window.learn(10);
    expect(first()).toBe(false); // one call still in flight
    expect(second()).toBe(true);
    // A submit that named no step leaves a held push to a claim.
    const failed = window.enter("i-2");
    window.hold(11);
    expect(failed()).toBe(true);
    const quiet = window.enter("i-3");
    expect(quiet()).toBe(false); // nothing held
  });

  it("forgets the step it knew once the session's cursor goes back (a prune removed a run)", () => {
    const window = new SubmitWindow();
    const leave = window.enter("i-1");
    window.learn(5000);
    leave();
    expect(window.known(5000)).toBe(true);
    expect(window.known(2000)).toBe(false); // lower than the last push: news again
    expect(window.known(2001)).toBe(false);
  });
});

describe("Pi's message events", () => {
  const submit = { type: "toolCall", name: "workflow", arguments: { action: "submit" } };
  it("sees an assistant message that calls the workflow tool's submit", () => {
    const message = (content: unknown, role = "assistant") => ({ message: { role, content } });
    expect(isAssistantMessage(message([]))).toBe(true);
    expect(isAssistantMessage(message([], "custom"))).toBe(false);
    expect(callsWorkflowSubmit(message([{ type: "text", text: "hi" }, submit]))).toBe(true);
    expect(callsWorkflowSubmit(message([{ ...submit, arguments: { action: "list" } }]))).toBe(
      false,
    );
    expect(callsWorkflowSubmit(message([{ ...submit, name: "bash" }]))).toBe(false);
    for (const odd of [null, undefined, {}, { message: null }, { message: { content: "x" } }]) {
      expect(isAssistantMessage(odd)).toBe(false);
      expect(callsWorkflowSubmit(odd)).toBe(false);
    }
  });
});
