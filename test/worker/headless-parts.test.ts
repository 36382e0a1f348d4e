/**
 * The pieces a headless worker uses around its Pi child: the bounded output tail on disk, the
 * bridge file written into the user-only state directory, and stopping a child's whole tree,
 * descendants in process groups of their own included (a Pi's bash tool detaches its commands),
 * the run's session files (and an interrupted attempt's usage read back from them) and what the
 * child's command line loads, Pi's first error line, and a step whose submission reaches the
 * bridge before Pi's record of the model call that made it.
 */
import { spawn } from "node:child_process";
import { PassThrough } from "node:stream";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  descendantsOf,
  readProcessIdentityNow,
  readProcessStatNow,
  signalGroup,
} from "../../src/os/process-identity.ts";
import { stopProcessTree, waitUntil } from "../../src/os/stop-group.ts";
import { createOutputTail } from "../../src/worker/output-tail.ts";
import { createStepOutput, teeProcessOutput } from "../../src/worker/step-output.ts";
import { lastStepLine, readStepOutput } from "../../src/base/step-output-files.ts";
import { readTranscript } from "../../src/host/pi-transcript.ts";
import { bridgeSource, ensureBridgeFile } from "../../src/worker/pi-bridge-file.ts";
import { headlessPiArgs, NO_AMBIENT_FLAGS } from "../../src/worker/headless-pi-args.ts";
import { memberSessionArgs, runSessionArgs } from "../../src/worker/headless-session.ts";
import { firstErrorLine, type PiChild, type RpcRecord } from "../../src/worker/pi-child.ts";
import type { StepPi } from "../../src/worker/headless-pi.ts";
import { driveStep } from "../../src/worker/headless-step.ts";
import {
  attemptSubmissionsInSession,
  attemptUsageInSession,
} from "../../src/worker/interrupted-usage.ts";
import type { AgentStepRequest } from "../../src/workflows/agent-executor.ts";
import { buildStepContract } from "../../src/workflows/step-contract.ts";
import type { StepUsage } from "../../src/protocol/step-usage.ts";

const dirs: string[] = [];
const leftovers: number[] = [];
afterEach(() => {
  for (const pid of leftovers.splice(0)) {
    const identity = readProcessIdentityNow(pid);
    if (identity) void signalGroup(identity, "SIGKILL");
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "piw-headless-"));
  dirs.push(dir);
  return dir;
}

describe("output tail", () => {
  it("keeps at most the budget, always the latest half, in 0600 files", () => {
    const dir = join(tempDir(), "workers");
    const tail = createOutputTail(dir, "epoch-pi1", ".out", 100);
    for (let i = 0; i < 40; i++) tail.write(Buffer.from(`line ${String(i).padStart(2, "0")}\n`));
    tail.close();
    const files = readdirSync(dir).sort();
    expect(files).toEqual(["epoch-pi1.1.out", "epoch-pi1.out"]);
    const kept = files.map((f) => readFileSync(join(dir, f), "utf8"));
    expect(kept.join("").length).toBeLessThanOrEqual(100);
    expect(readFileSync(join(dir, "epoch-pi1.out"), "utf8")).toContain("line 39\n");
    for (const f of files) expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it("keeps only the end of one oversized chunk and leaves no file for no output", () => {
    const dir = join(tempDir(), "workers");
    const big = createOutputTail(dir, "big", ".err", 10);
    big.write(Buffer.from("0123456789abcdef"));
    big.close();
    expect(readFileSync(join(dir, "big.err"), "utf8")).toBe("bcdef");
    const none = createOutputTail(dir, "none", ".out", 10);
    none.close();
    expect(readdirSync(dir)).toEqual(["big.err"]);
  });
});

describe("a step's output files", () => {
  it("keep the newest segments, redact split secrets, and let a reader follow and skip", () => {
    const dir = join(tempDir(), "workers");
    const secret = "ghp_0123456789abcdef";
    const out = createStepOutput(dir, "att-1", [secret], 64);
    out.write("stdout", "token=ghp_01234");
    out.write("stdout", "56789abcdef\n");
    const first = readStepOutput(dir, "att-1", "stdout", null, 1024);
    expect(first.text).toBe("token=[redacted]\n");
    for (let i = 0; i < 30; i++) out.write("stdout", `line ${String(i).padStart(2, "0")}\n`);
    out.write("stderr", Buffer.from("é")); // a character split across writes stays whole
    out.write("stderr", "\x1b[31mlast\x1b[0m words\n");
    out.close();
    const segments = readdirSync(dir).filter((f) => f.endsWith(".out"));
    expect(segments.length).toBe(2);
    expect(statSync(join(dir, segments[0])).mode & 0o777).toBe(0o600);
    const next = readStepOutput(dir, "att-1", "stdout", first.next, 1 << 20);
    expect(next.skipped).toBe(true);
    expect(next.text).toContain("line 29\n");
    expect(next.text).not.toContain(secret.slice(4));
    const again = readStepOutput(dir, "att-1", "stdout", next.next, 1024);
    expect(again).toMatchObject({ text: "", skipped: false });
    expect(readStepOutput(dir, "att-1", "stderr", null, 1024).text).toBe(
      "é\x1b[31mlast\x1b[0m words\n",
    );
    expect(lastStepLine(dir, "att-1")).toMatch(/^(éla|line 29)/);
    expect(readStepOutput(dir, "none", "stdout", null, 10).text).toBe("");
  });

  it("cost a step that prints nothing nothing, and take the process's writes only while theirs", () => {
    const dir = join(tempDir(), "workers");
    let secretReads = 0;
    const secrets = () => (secretReads++, ["ghp_0123456789abcdef"]);
    const silent = createStepOutput(dir, "att-quiet", secrets);
    silent.write("stdout", "");
    silent.close();
    expect(secretReads).toBe(0);
    expect(existsSync(dir)).toBe(false);
    // The process's own writes (an action's or compute's console output) go on to the stream
    // and are copied into the running step's files; between steps nothing is copied.
    const passed: string[] = [];
    const real = process.stdout.write;
    process.stdout.write = ((chunk: string) => passed.push(chunk) > 0) as typeof real;
    try {
      for (const attempt of ["att-a", "att-b"]) {
        const out = createStepOutput(dir, attempt, secrets);
        const untee = teeProcessOutput(out);
        process.stdout.write(`${attempt} says ghp_0123456789abcdef\n`);
        untee();
        out.close();
        process.stdout.write("between steps\n");
      }
    } finally {
      process.stdout.write = real;
    }
    expect(passed).toEqual([
      "att-a says ghp_0123456789abcdef\n",
      "between steps\n",
      "att-b says ghp_0123456789abcdef\n",
      "between steps\n",
    ]);
    expect(secretReads).toBe(2);
    for (const attempt of ["att-a", "att-b"]) {
      expect(readStepOutput(dir, attempt, "stdout", null, 1024).text).toBe(
        `${attempt} says [redacted]\n`,
      );
    }
  });

  it("reads a headless step's conversation from the run's session file", () => {
    const file = join(tempDir(), "run.jsonl");
    const at = (ms: number) => new Date(1_000_000 + ms).toISOString();
    const entry = (ms: number, message: unknown) =>
      JSON.stringify({ type: "message", id: String(ms), timestamp: at(ms), message });
    writeFileSync(
      file,
      [
        JSON.stringify({ type: "session", version: 3, id: "s", timestamp: at(0) }),
        entry(0, { role: "user", content: "an earlier step" }),
        entry(5_000, { role: "user", content: [{ type: "text", text: "Review the diff" }] }),
        entry(6_000, {
          role: "assistant",
          content: [{ type: "toolCall", id: "c", name: "bash", arguments: { command: "ls" } }],
        }),
        entry(7_000, {
          role: "toolResult",
          toolName: "bash",
          content: [{ type: "text", text: "a.ts" }],
        }),
      ].join("\n") + "\n",
    );
    const window = { startedAt: 1_000_000 + 4_000, finishedAt: null };
    const tail = readTranscript(file, window, null, 4096);
    expect(tail.text).toBe('› Review the diff\n  ⚙ bash {"command":"ls"}\n    ↳ bash: a.ts\n');
    const more = entry(8_000, { role: "assistant", content: [{ type: "text", text: "Done." }] });
    writeFileSync(file, readFileSync(file, "utf8") + more + "\n" + '{"type":"mess');
    const follow = readTranscript(file, window, tail.next, 4096);
    expect(follow.text).toBe("  Done.\n");
    expect(readTranscript(file, window, follow.next, 4096).text).toBe("");
  });

  it("keeps each step's conversation to itself when the next step starts within a second", () => {
    // Two steps of one run 300 ms apart: the time window's slack covers both, the step messages
    // (their contract's Attempt: line) tell them apart. Before, each step showed both.
    const file = join(tempDir(), "run.jsonl");
    const at = (ms: number) => new Date(1_000_000 + ms).toISOString();
    const entry = (ms: number, message: unknown) =>
      JSON.stringify({ type: "message", id: String(ms), timestamp: at(ms), message });
    const step = (text: string, attempt: string) => ({
      role: "user",
      content: [{ type: "text", text: `${text}\n\n---\nStep: s\nAttempt: ${attempt}\n` }],
    });
    const reply = (text: string) => ({ role: "assistant", content: [{ type: "text", text }] });
    writeFileSync(
      file,
      [
        JSON.stringify({ type: "session", version: 3, id: "s", timestamp: at(0) }),
        entry(0, step("Write a plan", "att-1")),
        entry(100, reply("planned")),
        // A prompt may hold an `Attempt:` line of its own: the contract's, the last, decides.
        entry(400, step("a or b?\nAttempt: att-1", "att-2")),
        entry(500, reply("a")),
        entry(550, { role: "user", content: [{ type: "text", text: "Reminder\nAttempt: att-2" }] }),
        entry(600, reply("a, again")),
      ].join("\n") + "\n",
    );
    const first = readTranscript(
      file,
      {
        attemptId: "att-1",
        startedAt: 1_000_000,
        finishedAt: 1_000_150,
      },
      null,
      4096,
    );
    expect(first.text).toBe(
      "› Write a plan\n  \n  ---\n  Step: s\n  Attempt: att-1\n  \n  planned\n",
    );
    const second = readTranscript(
      file,
      {
        attemptId: "att-2",
        startedAt: 1_000_350,
        finishedAt: 1_000_650,
      },
      null,
      4096,
    );
    expect(second.text).not.toContain("planned");
    expect(second.text).toContain("› a or b?");
    expect(second.text).toContain("  a, again\n");
  });
});

describe("bridge file", () => {
  it("is written once, by content hash, 0600 in a 0700 directory", () => {
    const stateDir = tempDir();
    const file = ensureBridgeFile(stateDir);
    expect(file).toMatch(/\/pi\/bridge-[0-9a-f]{16}\.mjs$/);
    expect(readFileSync(file, "utf8")).toBe(bridgeSource());
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(stateDir, "pi")).mode & 0o777).toBe(0o700);
    const mtime = statSync(file).mtimeMs;
    expect(ensureBridgeFile(stateDir)).toBe(file);
    expect(statSync(file).mtimeMs).toBe(mtime);
    expect(bridgeSource()).toContain('const SCHEMA = "pi-workflows.pi-bridge.v1"');
  });
});

describe("stopProcessTree()", () => {
  it("stops a leader that ignores SIGTERM and a descendant that left its group", async () => {
    // The leader ignores SIGTERM; its child starts a grandchild in a group of its own that
    // ignores SIGTERM too (an ignored signal stays ignored across exec).
    const grandchild = `['-c', 'trap \\'\\' TERM; exec sleep 300']`;
    const script = "trap '' TERM; " +
      `node -e "require('child_process').spawn('sh', ${grandchild}, {detached: true, stdio: 'ignore'}).unref(); setInterval(() => {}, 1000)" & ` +
      "wait";
    const leader = spawn("sh", ["-c", script], { detached: true, stdio: "ignore" });
    leftovers.push(leader.pid!);
    const identity = readProcessIdentityNow(leader.pid!)!;
    let sleeper = 0;
    expect(
      await waitUntil(async () => {
        const found = (await descendantsOf(leader.pid!)).find((d) => {
          const stat = readProcessStatNow(d.pid);
          return stat?.pgrp === d.pid &&
            readFileSync(`/proc/${d.pid}/cmdline`, "utf8").startsWith("sleep");
        });
        sleeper = found?.pid ?? 0;
        return sleeper !== 0;
      }, 10_000),
    ).toBe(true);
    leftovers.push(sleeper);
    expect(readProcessStatNow(sleeper)!.pgrp).not.toBe(leader.pid);
    expect(await stopProcessTree(identity, { graceMs: 300 })).toBe("killed");
    expect(readProcessIdentityNow(leader.pid!)).toBe(null);
    expect(readProcessIdentityNow(sleeper)).toBe(null);
    expect(await stopProcessTree(identity, { graceMs: 300 })).toBe("alreadyGone");
  });
});

describe("the run's session and the child's command line", () => {
  it("creates the run's session file 0600 in 0700 directories, and keeps what it holds", () => {
    const file = join(tempDir(), "sessions", "run-1", "run.jsonl");
    expect(runSessionArgs(file)).toEqual(["--session", file]);
    expect(statSync(file).size).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(file, "..")).mode & 0o777).toBe(0o700);
    writeFileSync(file, '{"type":"session"}\n');
    runSessionArgs(file);
    expect(readFileSync(file, "utf8")).toBe('{"type":"session"}\n');
  });

  it("starts a member fresh, forks it from a run session that has content, continues its own", () => {
    const root = join(tempDir(), "sessions", "run-1");
    const runFile = join(root, "run.jsonl");
    const key = { nodeId: "review/group", visit: 2, memberId: "a" };
    runSessionArgs(runFile);
    const fresh = memberSessionArgs(runFile, root, key);
    expect(fresh.origin).toBe("fresh");
    expect(fresh.dir).toBe(join(root, "members", "review_group.v2.a"));
    expect(fresh.args).toEqual(["--session", join(fresh.dir, "member.jsonl")]);
    rmSync(join(fresh.dir, "member.jsonl"));
    writeFileSync(runFile, '{"type":"session"}\n');
    const forked = memberSessionArgs(runFile, root, key);
    expect(forked).toMatchObject({ origin: "forked" });
    expect(forked.args).toEqual(["--fork", runFile, "--session-dir", forked.dir]);
    writeFileSync(join(forked.dir, "2026_x.jsonl"), '{"type":"session"}\n');
    expect(memberSessionArgs(runFile, root, key).args).toEqual([
      "--session",
      join(forked.dir, "2026_x.jsonl"),
    ]);
  });

  it("reads back what an interrupted attempt used from the session's branch", () => {
    const prompt = (attempt: string, note = "") => ({
      role: "user",
      content: [{
        type: "text",
        text: `${note}Step: work\nAttempt: ${attempt}\nExpected output: x`,
      }],
    });
    const reply = (input: number, cost: number, submit?: string) => ({
      role: "assistant",
      provider: "fake",
      model: "m",
      usage: { input, output: 10, cacheRead: 0, cacheWrite: 0, cost: { total: cost } },
      ...(submit === undefined ? {} : {
        content: [{
          type: "toolCall",
          id: `call-${submit}`,
          name: "workflow",
          arguments: { action: "submit", step: "work", attempt: submit, output: {} },
        }],
      }),
    });
    let id = 0;
    const entry = (message: unknown, parentId: string | null = id === 0 ? null : `e${id}`) =>
      JSON.stringify({ type: "message", id: `e${++id}`, parentId, message });
    const lines = [
      JSON.stringify({ type: "session", id: "s" }),
      entry(prompt("att-0")),
      entry(reply(500, 0.5)), // an earlier step
      entry(prompt("att-1")),
      entry(reply(100, 0.1)),
      entry({ role: "toolResult", content: [] }),
      entry(prompt("att-1", "Reminder 1 of 2: ...\n")),
      entry(reply(200, 0.2, "att-1")), // the submitting call
      // A prompt may hold an `Attempt:` line of its own: the contract's, the last, decides.
      entry(prompt("att-2", "Note: the previous attempt was interrupted:\nAttempt: att-1\n")),
      entry(reply(300, 0.3)),
      '{"type":"message","id":"torn', // a torn last write
    ];
    const text = lines.join("\n");
    expect(attemptUsageInSession(text, "att-1")).toMatchObject({
      input: 300,
      output: 20,
      cost: 0.3,
      model: "m",
    });
    expect(attemptUsageInSession(text, "att-2")).toMatchObject({ input: 300, cost: 0.3 });
    expect(attemptUsageInSession(text, "att-9")).toBeNull();
    // The submitting call counts for its attempt (an accepted one's count rides on the outcome).
    expect(attemptSubmissionsInSession(text, "att-1")).toBe(1);
    expect(attemptSubmissionsInSession(text, "att-2")).toBe(0);
    // Only the branch counts: a message left on an abandoned branch is not read.
    const branched = [...lines.slice(0, 5), entry(reply(900, 0.9), "e2")].join("\n");
    expect(attemptUsageInSession(branched, "att-1")).toBeNull();
  });

  it("loads nothing ambient by default; context files and skills with the project context", () => {
    const base = { session: ["--session", "/s.jsonl"], bridgeFile: "/b.mjs", recorded: ["-x"] };
    const plain = headlessPiArgs({ ...base, context: "none" });
    expect(plain).toEqual([
      "--mode",
      "rpc",
      "--session",
      "/s.jsonl",
      ...NO_AMBIENT_FLAGS,
      "-e",
      "/b.mjs",
      "-x",
    ]);
    for (const flag of ["--no-context-files", "--no-skills", "--no-mcp", "--no-extensions"]) {
      expect(plain).toContain(flag);
    }
    const project = headlessPiArgs({ ...base, context: "project", tools: ["read"] });
    expect(project).not.toContain("--no-context-files");
    expect(project).not.toContain("--no-skills");
    expect(project).toContain("--no-extensions");
    expect(project.slice(-2)).toEqual(["--tools", "read,workflow"]);
  });

  it("names Pi's first error line, not a later error or a version banner", () => {
    expect(firstErrorLine("Warning: x\nError: first\nError: second\npi 1.6.0\n")).toBe(
      "Error: first",
    );
    expect(firstErrorLine("  \nsomething broke: TypeError here\npi 1.6.0")).toBe(
      "something broke: TypeError here",
    );
    expect(firstErrorLine("pi 1.6.0\n")).toBe("pi 1.6.0");
    expect(firstErrorLine("")).toBe("");
  });
});

/**
 * The worker's end of one Pi: records are delivered when the test says, as the worker would read
 * them from Pi's stdout; the bridge call is handed to the step directly. The order of the two
 * pipes is what is under test, so each is played by hand.
 */
function scriptedPi() {
  const listeners = new Set<(record: RpcRecord) => void>();
  let exit: (code: number) => void = () => {};
  const exited = new Promise<{ code: number; signal: null }>((resolve) => {
    exit = (code) => resolve({ code, signal: null });
  });
  const prompts: string[] = [];
  const child = {
    pid: 0,
    identity: null,
    bridge: new PassThrough(),
    exited,
    drained: exited.then(() => {}),
    onRecord(listener: (record: RpcRecord) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    command(command: { type: string; message?: unknown }) {
      prompts.push(String(command.message));
      return Promise.resolve({ type: "response", command: command.type, success: true });
    },
    send() {},
    firstStderrError: () => "",
    stop: () => Promise.resolve(),
  } as unknown as PiChild;
  const pi: StepPi = { child, exit: null, onCall: null, busy: false, reply: () => {} };
  return {
    pi,
    prompts,
    emit: (...records: RpcRecord[]) => {
      for (const record of records) for (const listener of [...listeners]) listener(record);
    },
    exit,
  };
}

function stepFor(reports: StepUsage[]) {
  const contract = buildStepContract({
    kind: "agent",
    runId: "run-1",
    workflowName: "w",
    nodeId: "plan",
    attemptId: "att-1",
    prompt: "Plan it.",
    expectedOutput: null,
    statusDetail: null,
    deadlineAt: null,
  });
  const request = {
    signal: new AbortController().signal,
    publishUpdate: () => {},
    accept: (raw: unknown) => Promise.resolve({ ok: true, output: raw }),
    reportUsage: (usage: StepUsage) => reports.push(usage),
  } as unknown as AgentStepRequest;
  const submit = {
    callId: "call-1",
    toolCallId: "tool-1",
    params: { action: "submit", step: "plan", attempt: "att-1", output: { done: true } },
  };
  return { contract, request, submit };
}

const submitMessage = {
  role: "assistant",
  content: [{ type: "toolCall", id: "tool-1", name: "workflow", arguments: { action: "submit" } }],
  usage: { input: 100, output: 20, cacheRead: 0, cacheWrite: 0, cost: { total: 0.0006 } },
  provider: "fake",
  model: "fake-model",
};

describe("a submission that overtakes Pi's record of its model call", () => {
  it("ends the step only once that call's usage is counted, and reminds no one meanwhile", async () => {
    const { pi, prompts, emit } = scriptedPi();
    const reports: StepUsage[] = [];
    const { contract, request, submit } = stepFor(reports);
    const done = driveStep(pi, contract, request, [], contract.message);
    let settled = false;
    void done.then(() => (settled = true));
    const call = pi.onCall!(submit as never);
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    // The record, then the run's end (which would otherwise be read as a turn without a submission).
    emit({ type: "message_end", message: submitMessage }, { type: "agent_settled" });
    await call;
    expect(await done).toEqual({ done: true });
    expect(reports.at(-1)).toMatchObject({ input: 100, output: 20, cost: 0.0006 });
    expect(prompts).toHaveLength(1);
  });

  it("ends the step when Pi exits before the record is read", async () => {
    const { pi, exit } = scriptedPi();
    const reports: StepUsage[] = [];
    const { contract, request, submit } = stepFor(reports);
    const done = driveStep(pi, contract, request, [], contract.message);
    const replied = new Promise((resolve) => (pi.reply = (_id, verdict) => resolve(verdict)));
    const call = pi.onCall!(submit as never);
    expect(await replied).toMatchObject({ ok: true });
    exit(0);
    await call;
    expect(await done).toEqual({ done: true });
    expect(reports).toEqual([]);
  });
});
