import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/cli/exit-codes.ts";
import { parseControllerCommand } from "../../src/cli/parse-controller.ts";

describe("pi-workflows controller arguments", () => {
  it("parses apply with a spec, a compare-and-set and the child runs' Pi model", () => {
    expect(
      parseControllerCommand([
        "apply",
        "file-sync",
        "notes",
        "--spec-json",
        '{"a":1}',
        "--expect-version",
        "0",
        "--provider",
        "fake",
        "--model",
        "m",
        "--thinking",
        "low",
        "--wait",
      ]),
    ).toMatchObject({
      action: "apply",
      controller: "file-sync",
      key: "notes",
      spec: { json: { a: 1 } },
      expectVersion: 0,
      wait: true,
      timeoutSeconds: 60,
      piArgs: ["--provider", "fake", "--model", "m", "--thinking", "low"],
    });
    expect(parseControllerCommand(["list"])).toMatchObject({ action: "list", piArgs: [] });
    expect(
      parseControllerCommand([
        "reconcile",
        "c",
        "k",
        "--effect",
        "effect-1",
        "--applied",
        '{"id":7}',
      ]),
    )
      .toMatchObject({
        resolveEffect: { effectId: "effect-1", verdict: "applied", receipt: { id: 7 } },
      });
    expect(parseControllerCommand(["reconcile", "c", "k", "--effect", "effect-1", "--not-applied"]))
      .toMatchObject({ resolveEffect: { effectId: "effect-1", verdict: "notApplied" } });
    expect(parseControllerCommand(["reconcile", "c", "k"])).toMatchObject({ resolveEffect: null });
    expect(parseControllerCommand(["unbind", "asker", "--json"])).toMatchObject({
      action: "unbind",
      controller: "asker",
      key: null,
      json: true,
    });
    expect(parseControllerCommand(["--help"])).toBeNull();
  });

  it("refuses bad input with one line", () => {
    const cases: [string[], RegExp][] = [
      [[], /^Missing controller action/],
      [["frob"], /^Unknown controller action 'frob'/],
      [["get", "c"], /^Missing argument for 'controller get'/],
      [["get", "c", "k", "x"], /^Unexpected argument 'x'/],
      [
        ["reconcile", "c", "k", "--model", "m"],
        /^Option --model is not for 'controller reconcile'/,
      ],
      [["apply", "c", "k", "--provider", "p"], /^Option --provider needs --model too/],
      [["apply", "c", "k", "--model", "m", "--thinking", "lots"], /^Invalid --thinking 'lots'/],
      [["apply", "c", "k", "--spec-json", "{"], /^Invalid --spec-json/],
      [["apply", "c", "k", "--effect", "e"], /^Option --effect is not for 'controller apply'/],
      [["reconcile", "c", "k", "--effect", "e"], /^Option --effect needs exactly one verdict/],
      [["reconcile", "c", "k", "--not-applied"], /^Option --applied\/--not-applied needs --effect/],
      [["reconcile", "c", "k", "--effect", "e", "--applied", "{", "--not-applied"], /exactly one/],
      [["reconcile", "c", "k", "--effect", "e", "--applied", "{"], /^Invalid --applied/],
      [["apply", "c", "k", "--digest", "sha256:x"], /^Invalid --digest/],
      [["delete", "c", "k", "--expect-version", "1.5"], /^Invalid --expect-version/],
      // The shared parser's wording: a negative value is the option's, an unknown option named
      // alone (node's own lines read 'argument is ambiguous' and 'To specify a positional...').
      [
        ["delete", "c", "k", "--expect-version", "-1"],
        /^Invalid --expect-version: expected a whole number of at least 0$/,
      ],
      [["apply", "c", "k", "--timeout", "-5"], /^Invalid --timeout/],
      [
        ["get", "c", "k", "--frob"],
        /^Unknown option '--frob': run 'pi-workflows controller --help'$/,
      ],
      [["get", "c", "k", "--json=x"], /^Option '--json' takes no value: run 'pi-workflows/],
      [["unbind"], /^Missing argument for 'controller unbind': give <controller>/],
      [["unbind", "c", "k"], /^Unexpected argument 'k'/],
      [["unbind", "c", "--wait"], /^Option --wait is not for 'controller unbind'/],
      [
        ["bind", "asker"],
        /^A session binding is approved inside the Pi session .*\/controller bind asker/,
      ],
    ];
    for (const [args, pattern] of cases) {
      let error: unknown;
      try {
        parseControllerCommand(args);
      } catch (e) {
        error = e;
      }
      expect(error, args.join(" ")).toBeInstanceOf(UsageError);
      expect((error as Error).message, args.join(" ")).toMatch(pattern);
    }
  });
});
