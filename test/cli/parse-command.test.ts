import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/cli/exit-codes.ts";
import { parseCommand } from "../../src/cli/parse-command.ts";
import { readStartInput } from "../../src/cli/start-input.ts";
import { Readable } from "node:stream";

function usageError(argv: string[]): string {
  try {
    parseCommand(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    const message = (error as Error).message;
    expect(message).not.toContain("\n");
    expect(message).toMatch(/^[A-Z]/);
    expect(message).not.toMatch(/\.$/);
    return message;
  }
  throw new Error(`Expected a usage error for ${JSON.stringify(argv)}`);
}

describe("parseCommand()", () => {
  it("reads help and version", () => {
    expect(parseCommand([])).toEqual({ kind: "help", topic: null });
    expect(parseCommand(["--help"])).toEqual({ kind: "help", topic: null });
    expect(parseCommand(["--version"])).toEqual({ kind: "version", json: false });
    expect(parseCommand(["--version", "--json"])).toEqual({ kind: "version", json: true });
    expect(() => parseCommand(["--version", "--frob"])).toThrow(/takes only --json/);
    expect(parseCommand(["start", "--help"])).toEqual({ kind: "help", topic: "start" });
    expect(parseCommand(["host", "--help"])).toEqual({ kind: "help", topic: "host" });
    expect(parseCommand(["help", "cancel"])).toEqual({ kind: "help", topic: "cancel" });
  });

  it("turns task text into {task} and no text into {}", () => {
    expect(parseCommand(["start", "hello", "fix", "the", "bug"])).toEqual({
      kind: "start",
      workflow: "hello",
      input: { kind: "value", value: { task: "fix the bug" } },
      env: [],
      cwd: null,
      wait: false,
      json: false,
      piArgs: [],
      projectContext: false,
      budget: {},
    });
    expect(parseCommand(["start", "builtin:x", "--wait", "--json", "--cwd", "/tmp"])).toEqual({
      kind: "start",
      workflow: "builtin:x",
      input: { kind: "value", value: {} },
      env: [],
      cwd: "/tmp",
      wait: true,
      json: true,
      piArgs: [],
      projectContext: false,
      budget: {},
    });
    expect(parseCommand(["start", "w", "--project-context"])).toMatchObject({
      projectContext: true,
      budget: {},
    });
    expect(parseCommand(["start", "w", "--input-json", '{"n":[1,2]}'])).toMatchObject({
      input: { kind: "value", value: { n: [1, 2] } },
    });
  });

  it("reads the input from a file or stdin, and --env options", () => {
    expect(parseCommand(["start", "w", "--input-file", "in.json"])).toMatchObject({
      input: { kind: "file", path: "in.json" },
    });
    expect(parseCommand(["start", "w", "--input-json", "-"])).toMatchObject({
      input: { kind: "stdin" },
    });
    expect(parseCommand(["start", "w", "--env", "TOKEN", "--env", "MODE=a=b", "--env", "E="]))
      .toMatchObject({
        env: [{ name: "TOKEN", value: null }, { name: "MODE", value: "a=b" }, {
          name: "E",
          value: "",
        }],
      });
    expect(usageError(["start", "w", "--env", "1BAD"])).toContain("Invalid --env '1BAD'");
    expect(usageError(["start", "w", "--env", "=x"])).toContain("Invalid --env");
    expect(usageError(["start", "w", "--input-file", "a", "--input-json", "{}"])).toContain(
      "Cannot combine",
    );
    expect(usageError(["start", "w", "text", "--input-file", "a"])).toContain("Cannot combine");
    expect(usageError(["start", "w", "--input-file", ""])).toContain("--input-file is empty");
  });

  it("records --provider, --model, --thinking and everything after -- as Pi arguments", () => {
    expect(
      parseCommand([
        "start",
        "review",
        "check",
        "auth",
        "--thinking",
        "low",
        "--model",
        "sonnet",
        "--provider",
        "anthropic",
        "--",
        "--no-context-files",
        "--append-system-prompt",
        "be brief",
      ]),
    ).toMatchObject({
      input: { kind: "value", value: { task: "check auth" } },
      piArgs: [
        "--provider",
        "anthropic",
        "--model",
        "sonnet",
        "--thinking",
        "low",
        "--no-context-files",
        "--append-system-prompt",
        "be brief",
      ],
    });
    // After `--` nothing is ours: not even --wait.
    expect(parseCommand(["start", "w", "--", "--wait"])).toMatchObject({
      wait: false,
      piArgs: ["--wait"],
    });
    expect(usageError(["start", "w", "--thinking", "huge"])).toMatch(
      /^Invalid --thinking 'huge': use one of off, minimal/,
    );
    expect(usageError(["start", "w", "--provider", "x"])).toMatch(/needs --model too/);
    expect(usageError(["start", "w", "--model", ""])).toMatch(/--model needs a value/);
    expect(usageError(["start", "w", "--", "--api-key", "sk-123"])).toMatch(
      /^Pi option --api-key is not allowed for workflow steps: provider keys stay/,
    );
    expect(usageError(["start", "w", "--", "--mode=json"])).toMatch(/--mode is not allowed/);
    expect(usageError(["start", "w", "--", "--session", "s"])).toMatch(/one Pi session of its own/);
  });

  it("reads run commands and host actions", () => {
    expect(parseCommand(["status", "run-1", "--json"])).toEqual({
      kind: "status",
      runId: "run-1",
      attempts: 20,
      wait: false,
      json: true,
    });
    expect(parseCommand(["status", "run-1", "--wait"])).toMatchObject({ wait: true });
    expect(parseCommand(["status", "run-1", "--attempts", "all"])).toMatchObject({
      attempts: "all",
    });
    expect(parseCommand(["status", "run-1", "--attempts", "1000"])).toMatchObject({
      attempts: 1000,
    });
    expect(parseCommand(["list", "--all"])).toEqual({
      kind: "list",
      all: true,
      limit: null,
      json: false,
    });
    expect(parseCommand(["list", "--limit", "7"])).toMatchObject({ all: false, limit: 7 });
    for (const bad of ["0", "1001", "x", "2.5"]) {
      expect(usageError(["status", "r", "--attempts", bad])).toContain("Invalid --attempts");
    }
    expect(usageError(["list", "--limit", "0"])).toContain("Invalid --limit '0'");
    // A negative number is the option's value (parseArgs alone calls it a missing value).
    expect(usageError(["list", "--limit", "-3"])).toBe(
      "Invalid --limit '-3': give a number from 1",
    );
    expect(usageError(["status", "r", "--attempts", "-1"])).toContain(
      "Invalid --attempts '-1': give a number from 1 to",
    );
    expect(usageError(["list", "--limit", "--json"])).toContain("Option '--limit' needs a value");
    // JSON.parse reads 1e999 as Infinity, which no request can carry: refused here, where the
    // client had retried the unencodable request until its deadline.
    expect(usageError(["start", "w", "--input-json", '{"a":[1,-1e999]}'])).toBe(
      "Invalid --input-json: a number is too large for JSON (it reads as infinite); give a " +
        "finite number",
    );
    // A flag given a value is not a flag missing one.
    expect(usageError(["list", "--all=yes"])).toBe(
      "Option '--all' takes no value: run 'pi-workflows list --help'",
    );
    // One with a short form too is named by its long name (Node's message says '-f, --follow').
    expect(usageError(["logs", "r", "--follow=yes"])).toBe(
      "Option '--follow' takes no value: run 'pi-workflows logs --help'",
    );
    expect(parseCommand(["cancel", "run-2"])).toEqual({
      kind: "control",
      action: "cancel",
      runId: "run-2",
      json: false,
    });
    expect(parseCommand(["host", "status", "--json"])).toEqual({
      kind: "host",
      action: "status",
      json: true,
    });
    expect(parseCommand(["doctor"])).toEqual({ kind: "doctor", json: false });
    expect(parseCommand(["worker", "--resolve"])).toEqual({ kind: "worker", args: ["--resolve"] });
  });

  it("refuses bad command lines with one actionable line", () => {
    expect(usageError(["frobnicate"])).toBe(
      "Unknown command 'frobnicate': run 'pi-workflows --help'",
    );
    expect(usageError(["--frob"])).toContain("Unknown option '--frob'");
    expect(usageError(["start"])).toContain("Missing argument for 'start'");
    expect(usageError(["start", "w", "--bogus"])).toContain("Unknown option '--bogus'");
    expect(usageError(["start", "w", "--cwd"])).toContain("'--cwd' needs a value");
    expect(usageError(["start", "w", "--input-json", "{nope"])).toContain("Invalid --input-json");
    expect(usageError(["start", "w", "--input-json", " "])).toBe(
      "Invalid --input-json: it is empty, give a JSON value",
    );
    expect(usageError(["start", "w", "text", "--input-json", "{}"])).toContain(
      "Cannot combine --input-json, --input-file and task text",
    );
    expect(usageError(["status"])).toContain("Missing argument for 'status'");
    expect(usageError(["status", "a", "b"])).toContain("Unexpected argument 'b'");
    expect(usageError(["pause", "bad id"])).toContain("Invalid run id");
    expect(usageError(["host"])).toContain("Missing host action");
    expect(usageError(["host", "explode"])).toContain("Unknown host action 'explode'");
    expect(usageError(["list", "--json=1"])).toContain("list");
    expect(usageError(["help", "nothing"])).toContain("Unknown command 'nothing'");
    for (const days of ["-1", "x", "40000", "1.5"]) {
      expect(usageError(["prune", "--keep-days", days])).toContain(
        `Invalid --keep-days '${days}': give whole days from 0 to 36500`,
      );
    }
  });
});

describe("parseCommand() logs", () => {
  it("reads a run, an optional node, --follow and --attempts", () => {
    expect(parseCommand(["logs", "1a2b"])).toEqual({
      kind: "logs",
      runId: "1a2b",
      nodeId: null,
      follow: false,
      attempts: 20,
      json: false,
    });
    expect(parseCommand(["logs", "1a2b", "build", "-f", "--attempts", "3"])).toMatchObject({
      nodeId: "build",
      follow: true,
      attempts: 3,
    });
    for (
      const bad of [["logs"], ["logs", "1a2b", "a", "b"], ["logs", "1a2b", "--attempts", "99"]]
    ) {
      expect(() => parseCommand(bad), bad.join(" ")).toThrow(UsageError);
    }
  });
});

describe("parseCommand() answer", () => {
  const base = { kind: "answer", nodeId: null, choice: null, inputs: [], json: false };
  it("reads <runId> [<nodeId>] <answer> and --choice/--input", () => {
    expect(parseCommand(["answer", "run-1", "yes"])).toEqual({
      ...base,
      runId: "run-1",
      text: "yes",
    });
    expect(parseCommand(["answer", "run-1", "ask", '{"ok":true}', "--json"])).toEqual({
      ...base,
      runId: "run-1",
      nodeId: "ask",
      text: '{"ok":true}',
      json: true,
    });
    expect(
      parseCommand(["answer", "run-1", "gate", "--choice", "no", "--input", "why=a=b"]),
    ).toEqual({
      ...base,
      runId: "run-1",
      nodeId: "gate",
      text: null,
      choice: "no",
      inputs: [{ name: "why", value: "a=b" }],
    });
    expect(parseCommand(["answer", "run-1", "reject", "--input", "why=flaky"])).toEqual({
      ...base,
      runId: "run-1",
      text: "reject",
      inputs: [{ name: "why", value: "flaky" }],
    });
    expect(parseCommand(["answer", "--help"])).toEqual({ kind: "help", topic: "answer" });
  });

  it("refuses a missing or unquoted answer and malformed options", () => {
    expect(usageError(["answer", "run-1"])).toContain("Missing argument for 'answer'");
    expect(usageError(["answer", "run-1", "ask", "two", "words"])).toContain(
      "Unexpected argument 'words'",
    );
    expect(usageError(["answer", "run-1", "--choice", "a", "text", "more"])).toContain(
      "Unexpected argument 'more'",
    );
    expect(usageError(["answer", "run-1", "--input", "novalue"])).toBe(
      "Invalid --input 'novalue': expected name=value",
    );
    expect(usageError(["answer", "run-1", "--choice", " "])).toContain("Option --choice is empty");
    expect(usageError(["answer", "run-1", "  "])).toContain("The answer is empty");
  });
});

describe("readStartInput()", () => {
  it("says that stdin was empty, not 'Unexpected end of JSON input'", async () => {
    const error = await readStartInput({ kind: "stdin" }, Readable.from([])).catch((e) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect(error.message).toBe("Invalid input on stdin: it is empty, give a JSON value");
    expect(await readStartInput({ kind: "stdin" }, Readable.from(['{"a":', "1}"]))).toEqual({
      a: 1,
    });
  });
});
