/**
 * The quiet of a step handoff (handoff-quiet.ts): a host push that comes from a submit's start on
 * is taken up only once Pi waits, for the host's answer to the next submit or for the model's
 * reply, so the session's background work (`run.status`, the long poll's re-arm) never runs
 * while Pi turns the tool result into the next step's request. Measured in the real Pi
 * (docs/interactive.md): that work ran there before, on the handoff's path.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { HandoffQuiet, QUIET_LINGER_MS, QUIET_MAX_MS } from "../../src/extension/handoff-quiet.ts";

/** A push parked on `quiet`: `done()` says whether it was taken up yet. */
function park(quiet: HandoffQuiet) {
  let done = false;
  void quiet.ended().then(() => (done = true));
  return () => done;
}

describe("the quiet of a step handoff", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("takes a push up at once when no submit ran", async () => {
    const quiet = new HandoffQuiet();
    const push = park(quiet);
    await vi.advanceTimersByTimeAsync(0);
    expect(quiet.active).toBe(false);
    expect(push()).toBe(true);
  });

  it("holds a handoff's push until the next submit went out, not through that submit", async () => {
    const quiet = new HandoffQuiet();
    const submit = quiet.enter();
    const push = park(quiet);
    submit.leave();
    // The tool result and the next request: still quiet, whatever the model takes.
    await vi.advanceTimersByTimeAsync(0);
    expect(push()).toBe(false);
    quiet.noteAssistantStart();
    await vi.advanceTimersByTimeAsync(QUIET_LINGER_MS / 2);
    expect(push()).toBe(false);
    // The model submits the next step at once: the parked push runs while Pi waits for the
    // host, after the submit's own request (the next turn of the event loop).
    const nextSubmit = quiet.enter();
    expect(push()).toBe(false);
    await vi.advanceTimersByTimeAsync(0);
    expect(push()).toBe(true);
    // This submit's own push waits for its handoff in turn.
    const nextPush = park(quiet);
    await vi.advanceTimersByTimeAsync(QUIET_LINGER_MS);
    expect(nextPush()).toBe(false);
    nextSubmit.leave();
    quiet.noteAssistantStart();
    await vi.advanceTimersByTimeAsync(QUIET_LINGER_MS);
    expect(nextPush()).toBe(true);
    expect(quiet.active).toBe(false);
  });

  it("ends after the linger when the model's reply started and no submit follows", async () => {
    const quiet = new HandoffQuiet();
    const submit = quiet.enter();
    const push = park(quiet);
    // A reply that starts during the submit (another tool call of the same batch) is not the
    // handoff's request.
    quiet.noteAssistantStart();
    submit.leave();
    await vi.advanceTimersByTimeAsync(QUIET_LINGER_MS);
    expect(push()).toBe(false);
    quiet.noteAssistantStart();
    await vi.advanceTimersByTimeAsync(QUIET_LINGER_MS - 1);
    expect(push()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(push()).toBe(true);
  });

  it("ends when the agent settles after the submit, at the latest after QUIET_MAX_MS", async () => {
    const quiet = new HandoffQuiet();
    const submit = quiet.enter();
    const push = park(quiet);
    quiet.noteSettled(); // the submit still runs: no effect
    await vi.advanceTimersByTimeAsync(0);
    expect(push()).toBe(false);
    submit.leave();
    submit.leave(); // idempotent
    quiet.noteSettled();
    await vi.advanceTimersByTimeAsync(0);
    expect(push()).toBe(true);

    // A submit that never returns (a long validation) holds nothing past the bound.
    quiet.enter();
    const late = park(quiet);
    await vi.advanceTimersByTimeAsync(QUIET_MAX_MS - 1);
    expect(late()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(late()).toBe(true);
    expect(quiet.active).toBe(false);
  });

  it("lingers once after the submit, never past QUIET_MAX_MS, however often replies start", async () => {
    const quiet = new HandoffQuiet();
    const submit = quiet.enter();
    const push = park(quiet);
    submit.leave();
    // The model's replies start every LINGER - 1 ms (quick tool calls, no submit): only the
    // first lingers.
    quiet.noteAssistantStart();
    await vi.advanceTimersByTimeAsync(QUIET_LINGER_MS - 1);
    quiet.noteAssistantStart();
    await vi.advanceTimersByTimeAsync(1);
    expect(push()).toBe(true);
    // A first reply late in the quiet lingers only up to its latest end.
    const lateSubmit = quiet.enter();
    const late = park(quiet);
    lateSubmit.leave();
    await vi.advanceTimersByTimeAsync(QUIET_MAX_MS - 50);
    quiet.noteAssistantStart();
    await vi.advanceTimersByTimeAsync(49);
    expect(late()).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(late()).toBe(true);
  });

  it("ends with the submit when its answer named no next step (the push brings it)", async () => {
    const quiet = new HandoffQuiet();
    const submit = quiet.enter();
    const push = park(quiet);
    submit.noNextStep();
    await vi.advanceTimersByTimeAsync(0);
    expect(push()).toBe(false);
    submit.leave();
    await vi.advanceTimersByTimeAsync(0);
    expect(push()).toBe(true);
    expect(quiet.active).toBe(false);
  });

  it("ends at once when an overlapping submit named no next step, even one that ended first", async () => {
    const quiet = new HandoffQuiet();
    // Two calls for the same step overlap: A is accepted and names no next step (a compute node
    // runs next) and ends first; B is refused and ends last. The next step comes by the push.
    const a = quiet.enter();
    const b = quiet.enter();
    const push = park(quiet);
    a.noNextStep();
    a.leave();
    await vi.advanceTimersByTimeAsync(0);
    expect(push()).toBe(false);
    b.leave();
    await vi.advanceTimersByTimeAsync(0);
    expect(push()).toBe(true);
    expect(quiet.active).toBe(false);
  });

  it("waits as any handoff when a submit presented the next step", async () => {
    const quiet = new HandoffQuiet();
    // Overlapping: one named no next step, the other presented one (with its answer): the push
    // brings nothing Pi needs sooner, so it waits for the model's next request.
    const a = quiet.enter();
    const b = quiet.enter();
    const push = park(quiet);
    a.noNextStep();
    a.leave();
    b.nextStepPresented();
    b.leave();
    await vi.advanceTimersByTimeAsync(0);
    expect(push()).toBe(false);
    quiet.noteAssistantStart();
    await vi.advanceTimersByTimeAsync(QUIET_LINGER_MS);
    expect(push()).toBe(true);
    // One after the other within one quiet: the step presented first says nothing about the
    // next submit's answer, which named no next step: its push goes at once.
    const c = quiet.enter();
    c.nextStepPresented();
    c.leave();
    quiet.noteAssistantStart();
    const d = quiet.enter();
    const next = park(quiet);
    d.noNextStep();
    d.leave();
    await vi.advanceTimersByTimeAsync(0);
    expect(next()).toBe(true);
    expect(quiet.active).toBe(false);
  });

  it("lets everything go when the session closes", async () => {
    const quiet = new HandoffQuiet();
    quiet.enter();
    const push = park(quiet);
    quiet.close();
    await vi.advanceTimersByTimeAsync(0);
    expect(push()).toBe(true);
  });
});
