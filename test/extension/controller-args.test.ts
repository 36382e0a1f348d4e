import { describe, expect, it } from "vitest";
import { CommandArgsError } from "../../src/extension/command-args.ts";
import { CONTROLLER_USAGE, parseControllerArgs } from "../../src/extension/controller-args.ts";

const DIGEST = `sha256:${"ab".repeat(32)}`;

describe("/controller arguments", () => {
  it("parses each action", () => {
    expect(parseControllerArgs("")).toEqual({ action: "list", controller: null });
    expect(parseControllerArgs(" list  file-sync ")).toEqual({
      action: "list",
      controller: "file-sync",
    });
    expect(parseControllerArgs("get file-sync notes")).toEqual({
      action: "get",
      controller: "file-sync",
      key: "notes",
    });
    expect(parseControllerArgs('apply ./x.controller.ts notes {"a": [1, 2]}')).toEqual({
      action: "apply",
      controller: "./x.controller.ts",
      key: "notes",
      spec: { a: [1, 2] },
      expectVersion: null,
      digest: null,
    });
    expect(parseControllerArgs(`apply c k --expect-version 0 --digest ${DIGEST} "s t"`))
      .toEqual({
        action: "apply",
        controller: "c",
        key: "k",
        spec: "s t",
        expectVersion: 0,
        digest: DIGEST,
      });
    expect(parseControllerArgs("apply c k")).toMatchObject({ spec: undefined });
    expect(parseControllerArgs("reconcile c k --expect-version 3")).toEqual({
      action: "reconcile",
      controller: "c",
      key: "k",
      expectVersion: 3,
      resolveEffect: null,
    });
    expect(parseControllerArgs("reconcile c k --effect effect-1 --not-applied")).toMatchObject({
      resolveEffect: { effectId: "effect-1", verdict: "notApplied" },
    });
    expect(parseControllerArgs('reconcile c k --effect effect-1 --applied {"id": 7}'))
      .toMatchObject({
        resolveEffect: { effectId: "effect-1", verdict: "applied", receipt: { id: 7 } },
      });
    expect(parseControllerArgs("delete c k")).toEqual({
      action: "delete",
      controller: "c",
      key: "k",
      expectVersion: null,
    });
    expect(parseControllerArgs("bind asker")).toEqual({ action: "bind", controller: "asker" });
    expect(parseControllerArgs(" unbind  asker ")).toEqual({
      action: "unbind",
      controller: "asker",
    });
  });

  it("refuses bad input with one actionable line", () => {
    const cases: [string, RegExp][] = [
      ["help", /^Usage: \/controller /],
      ["frob c k", /^Unknown \/controller action 'frob': use one of list, get, apply/],
      ["get c", /^Missing argument: \/controller get <controller> <key>$/],
      ["get c k extra", /^Too many arguments for \/controller get$/],
      ["list a b", /^Too many arguments for \/controller list$/],
      ["get Bad_Name k", /^Invalid controller name: /],
      ["reconcile c k --expect-version", /^Invalid --expect-version/],
      ["delete c k --expect-version -1", /^Invalid --expect-version/],
      ["delete c k --digest " + DIGEST, /^Unknown option --digest: Usage/],
      ["apply c k --digest sha256:xyz", /^Invalid digest: /],
      ["apply c k --wait", /^Unknown option --wait: /],
      ["apply c k {not json", /^Invalid spec JSON: /],
      ["reconcile c k now", /^Too many arguments for \/controller reconcile$/],
      ["reconcile c k --effect e", /^An effect verdict needs both: --effect <effectId> and/],
      ["reconcile c k --not-applied", /^An effect verdict needs both/],
      ["reconcile c k --effect e --applied", /^Missing receipt JSON after --applied$/],
      ["reconcile c k --effect e --applied {x", /^Invalid receipt JSON: /],
      ["delete c k --effect e --not-applied", /^Unknown option --effect: Usage/],
      ["bind", /^Missing argument: \/controller bind <controller>$/],
      ["unbind a b", /^Too many arguments for \/controller unbind$/],
      ["bind Bad_Name", /^Invalid controller name: /],
    ];
    for (const [args, pattern] of cases) {
      let error: unknown;
      try {
        parseControllerArgs(args);
      } catch (e) {
        error = e;
      }
      expect(error, args).toBeInstanceOf(CommandArgsError);
      expect((error as Error).message, args).toMatch(pattern);
      expect((error as Error).message, args).not.toContain("\n");
    }
    expect(CONTROLLER_USAGE).not.toContain("\n");
  });
});
