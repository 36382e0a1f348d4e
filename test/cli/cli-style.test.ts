import { formatHostStatus } from "../../src/cli/format-host-status.ts";
import { describe, expect, it } from "vitest";
import { cliStyle, PLAIN_STYLE, stripAnsi } from "../../src/cli/cli-style.ts";
import { commandOptions } from "../../src/cli/completion-script.ts";
import { createFollowPrinter, summaryLines } from "../../src/cli/follow-printer.ts";
import { formatRun, formatRunHeadline, formatRunList } from "../../src/cli/format-run.ts";
import { distinctPrefixes, shortRunId } from "../../src/cli/run-ids.ts";
import { describeRunState } from "../../src/cli/run-state.ts";
import { detectTerminal } from "../../src/cli/terminal.ts";
import { terminalSafe } from "../../src/render/terminal-safe.ts";
import { COMMAND_HELP, MAIN_HELP } from "../../src/cli/usage.ts";
import type { Waiting } from "../../src/protocol/decision-request.ts";
import { failureMessage, HostUnavailableError } from "../../src/protocol/failures.ts";
import type { DefinitionSnapshot } from "../../src/protocol/definition-snapshot.ts";
import type { AttemptSummary, RunEvent, RunSummary } from "../../src/protocol/run-operations.ts";

const NOW = Date.UTC(2026, 0, 1, 12);
const ID = "run-1a2b3c4d-0000-4000-8000-000000000001";

function run(fields: Partial<RunSummary> = {}): RunSummary {
  return {
    runId: ID,
    workflowName: "hello",
    title: null,
    state: "running",
    queueState: "running",
    paused: false,
    revision: 3,
    executionMode: "headless",
    createdAt: NOW - 120_000,
    updatedAt: NOW - 1_000,
    ...fields,
  };
}

const decision: Waiting = {
  kind: "humanDecision",
  operation: "decision.answer",
  decisionId: "d-1",
  nodeId: "approval",
  attemptId: "a-2",
  since: NOW - 5000,
  deadlineAt: null,
  default: null,
  decision: {
    schema: "pi-workflows.human-decision-request.v1",
    audience: "release-team",
    title: "Ship?",
    subject: "r",
    presentation: { schema: "pi-workflows.decision-presentation.v1", summary: "s", blocks: [] },
    revision: 1,
    choices: { approve: { label: "Approve" }, reject: { label: "Reject" } },
  },
} as unknown as Waiting;

describe("detectTerminal()", () => {
  it("colours a TTY only, honouring NO_COLOR, FORCE_COLOR and TERM=dumb", () => {
    const tty = { isTTY: true, columns: 100 };
    const pipe = {};
    expect(detectTerminal(tty, { LANG: "C.UTF-8" })).toEqual({
      tty: true,
      color: true,
      unicode: true,
      columns: 100,
    });
    expect(detectTerminal(pipe, {}).color).toBe(false);
    expect(detectTerminal(tty, { NO_COLOR: "1" }).color).toBe(false);
    expect(detectTerminal(tty, { NO_COLOR: "" }).color).toBe(true);
    expect(detectTerminal(tty, { TERM: "dumb" }).color).toBe(false);
    expect(detectTerminal(pipe, { FORCE_COLOR: "1" }).color).toBe(true);
    expect(detectTerminal(tty, { FORCE_COLOR: "0" }).color).toBe(false);
    expect(detectTerminal(pipe, { FORCE_COLOR: "1", NO_COLOR: "1" }).color).toBe(true);
    expect(detectTerminal(pipe, {}).columns).toBe(80);
  });

  it("uses Unicode only in a UTF-8 locale (LC_ALL, then LC_CTYPE, then LANG)", () => {
    expect(detectTerminal({}, { LANG: "en_US.UTF-8" }).unicode).toBe(true);
    expect(detectTerminal({}, { LC_ALL: "C", LANG: "en_US.UTF-8" }).unicode).toBe(false);
    expect(detectTerminal({}, { LC_CTYPE: "de_DE.utf8" }).unicode).toBe(true);
    expect(detectTerminal({}, { LANG: "POSIX" }).unicode).toBe(false);
    expect(detectTerminal({}, {}).unicode).toBe(false);
  });
});

describe("cliStyle()", () => {
  it("has an ASCII fallback for every glyph and Unicode punctuation", () => {
    const ascii = cliStyle(detectTerminal({}, { LC_ALL: "C" }));
    expect([ascii.glyph("ok"), ascii.glyph("failed"), ascii.glyph("started")]).toEqual([
      "+",
      "x",
      ">",
    ]);
    expect(ascii.text("hello — Say hi… • a │ b · c")).toBe("hello - Say hi... * a | b - c");
    expect(PLAIN_STYLE.text("hello — hi")).toBe("hello — hi");
    const colored = cliStyle(detectTerminal({ isTTY: true }, { LANG: "C.UTF-8" }));
    expect(colored.paint("ok", "done")).toBe("\x1b[32mdone\x1b[0m");
    expect(PLAIN_STYLE.paint("ok", "done")).toBe("done");
    expect(stripAnsi(colored.paint("failed", "x"))).toBe("x");
  });
});

describe("run ids", () => {
  it("shows the first 8 hex digits of a generated id and tells candidates apart", () => {
    expect(shortRunId(ID)).toBe("run-1a2b3c4d");
    expect(shortRunId("run-7")).toBe("run-7");
    const a = "run-1a2b3c4d-0000-4000-8000-000000000001";
    const b = "run-1a2b3c4d-9000-4000-8000-000000000001";
    const c = "run-ffffffff-0000-4000-8000-000000000001";
    expect(distinctPrefixes([a, b, c])).toEqual([
      "run-1a2b3c4d-0",
      "run-1a2b3c4d-9",
      "run-ffffffff",
    ]);
  });
});

describe("describeRunState()", () => {
  it("names blocked, paused and waiting-for-whom with the one command that moves the run on", () => {
    const cases: [Partial<RunSummary>, Waiting | undefined, string, string | null][] = [
      [{ state: "queued", queueState: "queued" }, undefined, "queued", null],
      [{}, undefined, "running", null],
      [
        { paused: true, queueState: "parked" },
        undefined,
        "paused",
        "pi-workflows resume run-1a2b3c4d",
      ],
      [
        { blockedReason: "workflowSourceChanged", queueState: "parked" },
        undefined,
        "blocked",
        "pi-workflows resume run-1a2b3c4d --accept-source",
      ],
      [
        { state: "waiting", queueState: "parked" },
        decision,
        "waiting for release-team",
        "pi-workflows answer run-1a2b3c4d approve|reject",
      ],
      [
        { state: "waiting", queueState: "parked" },
        { ...decision, kind: "checkpoint", decision: undefined } as Waiting,
        "waiting for answer",
        "pi-workflows answer run-1a2b3c4d '<json or text>'",
      ],
      [{ state: "completed", queueState: "done" }, undefined, "completed", null],
      [{ state: "timed_out", queueState: "failed" }, undefined, "timed out", null],
      // Over budget: the flags raise the limits the host says stopped it (its own or its
      // controller's total: test/controllers/state.test.ts).
      [
        { blockedReason: "budgetExceeded", budgetRaise: ["maxTokens"] },
        undefined,
        "over budget",
        "pi-workflows budget run-1a2b3c4d --raise-tokens <N>",
      ],
      [
        {
          blockedReason: "budgetExceeded",
          budget: { maxCostUsd: 0.01, maxTokens: 9000 },
          budgetRaise: ["maxCostUsd"],
        },
        undefined,
        "over budget",
        "pi-workflows budget run-1a2b3c4d --raise <USD>",
      ],
      [
        { blockedReason: "budgetExceeded", budgetRaise: ["maxCostUsd", "maxTokens"] },
        undefined,
        "over budget",
        "pi-workflows budget run-1a2b3c4d --raise <USD> --raise-tokens <N>",
      ],
      // No limit to raise (none left): status tells what happened.
      [
        { blockedReason: "budgetExceeded" },
        undefined,
        "over budget",
        "pi-workflows status run-1a2b3c4d",
      ],
    ];
    for (const [fields, waiting, word, next] of cases) {
      const state = describeRunState(run(fields), { waiting });
      expect([state.word, state.next], word).toEqual([word, next]);
    }
    const interactive = describeRunState(
      run({ state: "waiting", queueState: "parked", executionMode: "interactive" }),
      { attempts: [{ nodeId: "draft", nodeKind: "agent", state: "waiting" } as AttemptSummary] },
    );
    expect(interactive).toMatchObject({ word: "waiting for Pi session", next: null });
    expect(interactive.reason).toContain("step draft runs in the Pi session");
    expect(describeRunState(run({ blockedReason: "effectAmbiguous" })).reason).toContain(
      "may have applied",
    );
  });
});

describe("formatRunList()", () => {
  it("prints one line per run and the next command under a run that needs someone", () => {
    const runs = [
      run({ state: "waiting", queueState: "parked", createdAt: NOW - 5_000 }),
      run({
        runId: "run-99999999-0000-4000-8000-000000000001",
        title: "Say hello to Ada",
        createdAt: NOW - 3_600_000,
      }),
      run({
        runId: "run-88888888-0000-4000-8000-000000000001",
        state: "failed",
        queueState: "failed",
        error: { code: "commandFailed", message: "exit 2" },
      }),
    ];
    const text = formatRunList(runs, {
      now: NOW,
      waiting: new Map([[ID, { waiting: decision }]]),
    });
    expect(text.split("\n")).toEqual([
      "⏸ waiting for release-team  run-1a2b3c4d   5s ago  hello",
      "  next: pi-workflows answer run-1a2b3c4d approve|reject",
      "◐ running                   run-99999999  60m ago  hello — Say hello to Ada",
      "✗ failed                    run-88888888   2m ago  hello (commandFailed)",
    ]);
    const ascii = cliStyle(detectTerminal({}, { LC_ALL: "C" }));
    expect(formatRunList(runs.slice(1, 2), { now: NOW, style: ascii })).toBe(
      "* running  run-99999999  60m ago  hello - Say hello to Ada",
    );
  });

  it("cuts lines to the terminal width on a TTY and colours the state", () => {
    const style = cliStyle(detectTerminal({ isTTY: true, columns: 40 }, { LANG: "C.UTF-8" }));
    const [line] = formatRunList([run({ title: "a very long title that does not fit" })], {
      now: NOW,
      style,
    }).split("\n");
    expect(line.startsWith("\x1b[33m◐ running\x1b[0m")).toBe(true);
    expect([...stripAnsi(line)]).toHaveLength(40);
    expect(stripAnsi(line).endsWith("…")).toBe(true);
  });

  it("shows what runs spent once one used a model: cost, or tokens when no price is known", () => {
    const runs = [
      run({ spend: { tokens: 5100, cost: 0.018795 } }),
      run({
        runId: "run-99999999-0000-4000-8000-000000000001",
        spend: { tokens: 5100, cost: null },
      }),
      run({ runId: "run-88888888-0000-4000-8000-000000000001" }),
    ];
    expect(formatRunList(runs, { now: NOW }).split("\n")).toEqual([
      "◐ running  run-1a2b3c4d  2m ago   $0.0188  hello",
      "◐ running  run-99999999  2m ago  5.1k tok  hello",
      "◐ running  run-88888888  2m ago         -  hello",
    ]);
  });

  it("names the reason of a blocked run", () => {
    const text = formatRunList([run({ blockedReason: "effectAmbiguous", queueState: "parked" })], {
      now: NOW,
    });
    expect(text.split("\n")[0]).toMatch(
      /^! blocked {2}run-1a2b3c4d {2}.* hello \(effectAmbiguous\)$/,
    );
  });

  it("says how to see finished runs when nothing is active", () => {
    expect(formatRunList([])).toBe(
      "No active runs. 'pi-workflows list --all' shows finished ones too.",
    );
    expect(formatRunList([], { all: true })).toContain("No runs yet: start one with");
  });
});

describe("formatRun()", () => {
  it("shows a blocked run's reason and the command that moves it on", () => {
    const text = formatRun(
      run({ blockedReason: "workflowSourceChanged", queueState: "parked" }),
      [{
        attemptId: "a-1",
        nodeId: "greet",
        sequence: 1,
        nodeKind: "compute",
        effect: "pure",
        state: "ok",
        startedAt: NOW - 60_000,
        finishedAt: NOW - 59_988,
        deadlineAt: null,
      }],
      {
        now: NOW,
        sourceChanges: [{
          source: "/home/ada/wf/deploy.workflow.ts",
          reason: "changed",
          recorded: "sha256:0123456789abcdef0123",
          current: "sha256:fedcba9876543210fedc",
        }],
      },
    );
    expect(text.split("\n").slice(0, 9)).toEqual([
      `run ${ID}`,
      "workflow: hello",
      "state: ! blocked (queue parked)",
      "why: its workflow source changed since it started; go on with the files as they are now, " +
      "or restore them and resume it without --accept-source",
      "changed since the run started:",
      "  /home/ada/wf/deploy.workflow.ts has changed (started with sha256:0123456789ab, now " +
      "sha256:fedcba987654)",
      "go on with the files as they are now: pi-workflows resume run-1a2b3c4d --accept-source",
      "or restore them and resume it: pi-workflows resume run-1a2b3c4d",
      "next: pi-workflows resume run-1a2b3c4d --accept-source",
    ]);
    expect(text).toContain("  ✓ greet  compute, ok, 12ms");
    expect(formatRunHeadline(run({ title: "Hi" }))).toBe("run-1a2b3c4d  hello — Hi  running");
  });

  it("names a headless run's Pi session file only once an agent step started it", () => {
    const pi = { context: "none" as const, sessionFile: "/state/sessions/run-1/run.jsonl" };
    const before = formatRun(run({ state: "completed", queueState: "done" }), [], {
      now: NOW,
      pi: { ...pi, sessionStarted: false },
    });
    expect(before).toContain("pi session: none yet (no agent step of the run has started)\n");
    expect(before).not.toContain("pi --session");
    const after = formatRun(run(), [], { now: NOW, pi: { ...pi, sessionStarted: true } });
    expect(after).toContain(
      "pi session: /state/sessions/run-1/run.jsonl (open it with: pi --session " +
        "/state/sessions/run-1/run.jsonl)",
    );
  });

  it("offers retry for a run that failed or timed out in a node, and only then", () => {
    const step = (nodeId: string, sequence: number, state: string) =>
      ({
        attemptId: `a-${sequence}`,
        nodeId,
        sequence,
        nodeKind: "shell",
        state,
      }) as AttemptSummary;
    const failedRun = run({
      state: "failed",
      queueState: "failed",
      error: { code: "commandFailed", message: "exited with code 3" },
    });
    const lines = summaryLines(failedRun, {
      attempts: [step("prepare", 1, "ok"), step("build", 2, "failed")],
    });
    expect(lines.slice(1)).toEqual([
      "error: commandFailed: exited with code 3",
      "why: step build failed: fix the workflow, then go on from that step (the steps before it " +
      "are not run again)",
      "next: pi-workflows retry run-1a2b3c4d",
    ]);
    // A step Pi refused (no API key) is not the workflow's fault: the why says where to look.
    const refused = {
      ...step("draft", 2, "failed"),
      nodeKind: "agent",
      error: { code: "piPromptRefused", message: "No API key found for the selected model." },
    } as AttemptSummary;
    expect(describeRunState(failedRun, { attempts: [step("prepare", 1, "ok"), refused] }))
      .toMatchObject({
        reason: "step draft failed in Pi (piPromptRefused), not in the workflow: fix what the " +
          "error says (a provider key or login, the model, the pi command), then go on from " +
          "that step (the steps before it are not run again)",
        next: "pi-workflows retry run-1a2b3c4d",
      });
    const timedOut = run({ state: "timed_out", queueState: "failed" });
    expect(describeRunState(timedOut, { attempts: [step("wait", 1, "timed_out")] }).next)
      .toBe("pi-workflows retry run-1a2b3c4d");
    // Failed outside a node (routing, its own limits, a load error), or attempts not known
    // (`list`): the host would refuse a retry, so none is offered.
    expect(describeRunState(failedRun, { attempts: [step("build", 1, "ok")] }).next).toBeNull();
    expect(describeRunState(failedRun, { attempts: [] }).next).toBeNull();
    expect(describeRunState(failedRun).next).toBeNull();
    expect(formatRunList([failedRun], { all: true })).not.toContain("next:");
  });

  it("says in words what a user of a built-in whose revision changed can do", () => {
    // A built-in changes with the package: there is no file to restore, and no reason code.
    const text = formatRun(
      run({
        workflowName: "autoplan",
        blockedReason: "workflowSourceChanged",
        queueState: "parked",
      }),
      [],
      {
        now: NOW,
        sourceChanges: [{ source: "builtin:autoplan", reason: "revisionChanged", root: true }],
      },
    );
    expect(text.split("\n").slice(2, 8)).toEqual([
      "state: ! blocked (queue parked)",
      "why: pi-workflows was updated since it started, and a built-in workflow it runs changed " +
      "with it; a built-in cannot be restored: go on with this version's, or cancel the run",
      "changed since the run started:",
      "  the built-in workflow autoplan is another revision in this version of pi-workflows",
      "go on with this version of pi-workflows: pi-workflows resume run-1a2b3c4d --accept-source",
      "or end the run: pi-workflows cancel run-1a2b3c4d",
    ]);
    expect(text).not.toMatch(/revisionChanged|restore them|pi-workflows resume run-1a2b3c4d\n/);
    // A built-in that a project workflow includes and is gone: the project's file does not load
    // while it includes it, so --accept-source alone would fail; remove the include first.
    const parked = run({ blockedReason: "workflowSourceChanged", queueState: "parked" });
    const mountedGone = formatRun(parked, [], {
      now: NOW,
      sourceChanges: [{ source: "builtin:old", reason: "unknownBuiltin" }],
    });
    expect(mountedGone.split("\n").slice(2, 9)).toEqual([
      "state: ! blocked (queue parked)",
      "why: pi-workflows was updated since it started, and this version no longer has a " +
      "built-in workflow it includes: remove the include from the workflow file and accept it, " +
      "resume it under a version that has it, or cancel the run",
      "changed since the run started:",
      "  the built-in workflow old is no longer in this version of pi-workflows",
      "remove the include of builtin:old from the workflow file, then: pi-workflows resume " +
      "run-1a2b3c4d --accept-source",
      "or resume it under a version that has this built-in: pi-workflows resume run-1a2b3c4d",
      "or end the run: pi-workflows cancel run-1a2b3c4d",
    ]);
    expect(mountedGone).not.toContain("go on with this version");
    expect(mountedGone).not.toMatch(/unknownBuiltin|restore them/);
    // The run's own workflow is the gone built-in: the host cannot load it, so --accept-source
    // would fail; only a cancel, or a resume under a version that has it.
    const rootGone = formatRun(parked, [], {
      now: NOW,
      sourceChanges: [{ source: "builtin:old", reason: "unknownBuiltin", root: true }],
    });
    expect(rootGone.split("\n").slice(2, 8)).toEqual([
      "state: ! blocked (queue parked)",
      "why: pi-workflows was updated since it started, and this version no longer has its " +
      "built-in workflow: cancel the run, or resume it under a version that has it",
      "changed since the run started:",
      "  the built-in workflow old is no longer in this version of pi-workflows",
      "end the run: pi-workflows cancel run-1a2b3c4d",
      "or resume it under a version that has this built-in: pi-workflows resume run-1a2b3c4d",
    ]);
    expect(rootGone).not.toMatch(/--accept-source|unknownBuiltin/);
    const rootGoneState = describeRunState(parked, {
      sourceChanges: [{ reason: "unknownBuiltin", root: true }],
    });
    expect(rootGoneState.next).toBe("pi-workflows cancel run-1a2b3c4d");
  });
});

describe("error texts", () => {
  it("say a failure class summary once when the detail already carries it", () => {
    const inner = new HostUnavailableError("the socket is gone");
    expect(new HostUnavailableError(inner.message).message).toBe(inner.message);
    expect(failureMessage("hostUnavailable", "x")).toBe(
      "Host unavailable: the client cannot reach or start the workflow host: x",
    );
  });
});

describe("help", () => {
  it("has an example in every command's help", () => {
    expect(MAIN_HELP).toContain("Examples:");
    for (const [topic, text] of Object.entries(COMMAND_HELP)) {
      expect(text, topic).toMatch(/^Examples?( \([^)]*\))?:\n {2}pi-workflows /m);
    }
  });

  it("gives completion the options a command takes, not the ones its text refuses", () => {
    const start = commandOptions("start");
    expect(start.flags).toContain("--input-json");
    expect(start.valued).toContain("--input-json");
    expect(start.flags).not.toContain("--api-key");
  });
});

describe("createFollowPrinter()", () => {
  const events = (): RunEvent[] => [
    { seq: 1, type: "node.started", at: NOW, nodeId: "copy", attemptId: "a-1" },
    ...[1, 2, 3].map((completed, i) => ({
      seq: 2 + i,
      type: "node.update",
      at: NOW + 1500 * (i + 1),
      attemptId: "a-1",
      data: { type: "progress", key: "files", progress: { completed, total: 10, unit: "files" } },
    })),
    { seq: 6, type: "node.finished", at: NOW + 5000, nodeId: "copy", attemptId: "a-1" },
  ];
  const snapshot = {
    schema: "pi-workflows.definition-snapshot.v1",
    name: "p",
    startAt: "copy",
    nodes: { copy: { kind: "action", statusDetail: "copy the files" } },
    edges: {},
  } as DefinitionSnapshot;

  it("prints plain lines with numbers, rate and ETA when piped", () => {
    const out: string[] = [];
    const printer = createFollowPrinter({ out: (t) => out.push(t), err: () => {} }, () => NOW);
    printer.definition(snapshot);
    printer.events(events());
    printer.finish(run({ state: "completed", queueState: "done", output: { n: 3 } }), {
      attempts: [{ nodeId: "copy" } as AttemptSummary],
    });
    expect(out).toEqual([
      "▶ copy · copy the files",
      "  · copy 1/10 files 10%",
      "  · copy 2/10 files 20% · 0.7/s · ETA 12s",
      "  · copy 3/10 files 30% · 0.7/s · ETA 10s",
      "✓ copy  5.0s",
      "✓ completed  run-1a2b3c4d  hello · 1 node · 1m59s",
      '{"n":3}',
    ]);
  });

  it("says why a node failed, from the attempt, when the workflow routes on", () => {
    const out: string[] = [];
    const printer = createFollowPrinter({ out: (t) => out.push(t), err: () => {} }, () => NOW);
    const failed = (attemptId: string, seq: number, outcome: string, code: string) => [
      { seq, type: "node.started", at: NOW, nodeId: "try", attemptId },
      {
        seq: seq + 1,
        type: "node.failed",
        at: NOW + 12,
        nodeId: "try",
        attemptId,
        data: { attemptId, nodeId: "try", outcome, code },
      },
    ];
    const attempt = (attemptId: string, message: string) =>
      ({ attemptId, nodeId: "try", error: { code: "x", message } }) as AttemptSummary;
    printer.events(
      [
        ...failed("a-1", 1, "failed", "nodeFailed"),
        ...failed("a-2", 3, "timed_out", "nodeTimedOut"),
      ],
      [attempt("a-1", "flaky failure on visit 1"), attempt("a-2", "x".repeat(300))],
    );
    // An attempt the status page no longer lists: the code alone.
    printer.events(failed("a-3", 5, "failed", "nodeFailed"), []);
    expect(out).toEqual([
      "▶ try",
      "✗ try  12ms: nodeFailed: flaky failure on visit 1",
      "↺ try runs again (visit 2): its last attempt failed and the workflow routes to it again",
      "▶ try",
      `⧗ try timed out  12ms: nodeTimedOut: ${"x".repeat(159)}…`,
      "↺ try runs again (visit 3): its last attempt timed out and the workflow routes to it again",
      "▶ try",
      "✗ try  12ms: nodeFailed",
    ]);
  });

  it("shows answers, blocks, interruptions, resumes and why a node runs again", () => {
    const out: string[] = [];
    const printer = createFollowPrinter({ out: (t) => out.push(t), err: () => {} }, () => NOW);
    const started = (seq: number, nodeId: string, attemptId: string) => ({
      seq,
      type: "node.started",
      at: NOW,
      nodeId,
      attemptId,
    });
    const finished = (seq: number, nodeId: string, attemptId: string) => ({
      seq,
      type: "node.finished",
      at: NOW + 5,
      nodeId,
      attemptId,
    });
    printer.events([
      started(1, "deploy", "a-1"),
      {
        seq: 2,
        type: "run.interrupted",
        at: NOW + 3,
        data: { reason: "workerCrashed", interruptedAttemptId: "a-1", blocked: true },
      },
      { seq: 3, type: "run.resumed", at: NOW + 4, data: { wasBlocked: "effectAmbiguous" } },
      started(4, "deploy", "a-2"),
      finished(5, "deploy", "a-2"),
      started(6, "approve", "a-3"),
      { seq: 7, type: "run.waiting", at: NOW + 6, data: {} },
      {
        seq: 8,
        type: "run.answered",
        at: NOW + 7,
        // As the host sends it (run-queries.ts eventOf): the node and attempt lifted out of data.
        nodeId: "approve",
        attemptId: "a-3",
        data: { kind: "checkpoint", resolution: "answered" },
      },
      finished(9, "approve", "a-3"),
      started(10, "deploy", "a-4"),
      { seq: 11, type: "run.blocked", at: NOW + 8, data: { reason: "budgetExceeded" } },
    ]);
    expect(out).toEqual([
      "▶ deploy",
      "↺ deploy interrupted: workerCrashed",
      "! blocked: effectAmbiguous",
      "▷ resumed (was blocked: effectAmbiguous)",
      "↺ deploy runs again (visit 2): its attempt was interrupted (workerCrashed) and runs from " +
      "its start",
      "▶ deploy",
      "✓ deploy  5ms",
      "▶ approve",
      "◆ approve answered (checkpoint)",
      "✓ approve  5ms",
      "↺ deploy runs again (visit 3): the workflow routed back to it",
      "▶ deploy",
      "! blocked: budgetExceeded",
    ]);
  });

  it("closes an interactive step's line with what it used, as a headless step's", () => {
    const out: string[] = [];
    const printer = createFollowPrinter({ out: (t) => out.push(t), err: () => {} }, () => NOW);
    const step = (seq: number, nodeId: string, attemptId: string) => [
      { seq, type: "node.started", at: NOW, nodeId, attemptId },
      { seq: seq + 1, type: "run.waiting", at: NOW + 1, data: { interactionId: "i" } },
    ];
    const usage = { cost: 0.008295, tokens: 2800 };
    printer.events([
      ...step(1, "ask", "a-1"),
      {
        seq: 3,
        type: "interaction.accepted",
        at: NOW + 5000,
        nodeId: "ask",
        attemptId: "a-1",
        data: { interactionId: "i", submissionId: "s", usage },
      },
      ...step(4, "more", "a-2"),
      {
        seq: 6,
        type: "interaction.failed",
        at: NOW + 900,
        nodeId: "more",
        attemptId: "a-2",
        data: { code: "noSubmission", interactionId: "i", usage: { cost: null, tokens: 120 } },
      },
    ]);
    expect(out).toEqual([
      "▶ ask",
      "✓ ask  5.0s  · 2.8k tokens, $0.008295",
      "▶ more",
      "✗ more  900ms  · 120 tokens: noSubmission",
    ]);
  });

  it("redraws one live line on a TTY and leaves only finished nodes on screen", () => {
    const written: string[] = [];
    const style = cliStyle(
      detectTerminal({ isTTY: true, columns: 100 }, { NO_COLOR: "1", LANG: "C.UTF-8" }),
    );
    const printer = createFollowPrinter({
      out: (t) => written.push(`${t}\n`),
      err: () => {},
      write: (t) => written.push(t),
      style,
    }, () => NOW + 5000);
    printer.definition(snapshot);
    printer.events(events().slice(0, 3));
    expect(written).toEqual([
      "\r\x1b[2K◐ copy · copy the files  0ms",
      "\r\x1b[2K◐ copy · copy the files  1.5s  [█░░░░░░░░░░░] 1/10 files 10%",
      "\r\x1b[2K◐ copy · copy the files  3.0s  [██░░░░░░░░░░] 2/10 files 20% · 0.7/s · ETA 12s",
    ]);
    written.length = 0;
    printer.events(events().slice(4));
    expect(written).toEqual(["\r\x1b[2K", "✓ copy  5.0s\n"]);
  });
});

describe("terminalSafe()", () => {
  it("shows control characters as escapes, keeping only the CLI's own sequences", () => {
    expect(terminalSafe("plain ✓ text\n\tnext")).toBe("plain ✓ text\n\tnext");
    expect(terminalSafe("a\x1b]0;t\x07b\rc\x9bd\u202ee\x00")).toBe(
      "a\\u001b]0;t\\u0007b\\u000dc\\u009bd\\u202ee\\u0000",
    );
    const painted = "\x1b[32m✓\x1b[0m \x1b[2Kx";
    expect(terminalSafe(painted)).toBe("\\u001b[32m✓\\u001b[0m \\u001b[2Kx");
    expect(terminalSafe(painted, { colour: true })).toBe("\x1b[32m✓\x1b[0m \\u001b[2Kx");
    expect(terminalSafe("\r\x1b[2K\x1b[33m◐\x1b[0m", { colour: true, redraw: true })).toBe(
      "\r\x1b[2K\x1b[33m◐\x1b[0m",
    );
    // Inside JSON the escape is the same value.
    const json = JSON.stringify({ s: "x\x9by\u202e" });
    expect(JSON.parse(terminalSafe(json))).toEqual({ s: "x\x9by\u202e" });
  });
});

describe("formatHostStatus()", () => {
  it("says how ambiguous effects go away (an ended run's stay until recorded)", () => {
    const status = {
      state: "running",
      epoch: 3,
      socket: "available",
      activeWorkers: 0,
      runs: { queued: 0, running: 0, parked: 0, waiting: 0 },
      expiredClaims: 0,
      pendingInteractions: 0,
    };
    expect(formatHostStatus({ ...status, ambiguousEffects: 0 } as never)).toContain(
      "ambiguous effects: 0",
    );
    expect(formatHostStatus({ ...status, ambiguousEffects: 2 } as never)).toContain(
      "ambiguous effects: 2 (each stays, an ended run's too, until what happened is recorded: " +
        "its run's status names the 'pi-workflows effect resolve' command)",
    );
  });
});
