/**
 * The refusal of a plain `resume` while a run's source still differs: the change in words, and
 * only the ways on that can work (a built-in changes with the package and cannot be restored).
 */
import { describe, expect, it } from "vitest";
import { stillChangedMessage } from "../../src/host/accept-source.ts";

describe("stillChangedMessage()", () => {
  const accept = "'pi-workflows resume run-1 --accept-source'";

  it("a changed file: restore it and resume, or accept it", () => {
    expect(stillChangedMessage("run-1", [{ source: "/p/w.workflow.ts", reason: "changed" }])).toBe(
      "Resume refused: /p/w.workflow.ts has changed since run run-1 started; restore it and " +
        `resume, or go on with it as it is now: ${accept}`,
    );
  });

  it("a built-in of another revision or gone: words, not codes, and only --accept-source", () => {
    const revision = stillChangedMessage("run-1", [
      { source: "builtin:echo", reason: "revisionChanged" },
      { source: "/p/helper.ts", reason: "missing" },
    ]);
    expect(revision).toBe(
      "Resume refused: the built-in workflow echo is another revision in this version of " +
        "pi-workflows (and 1 more) since run run-1 started; a built-in workflow cannot be " +
        `restored, go on with this version's: ${accept}`,
    );
    const gone = stillChangedMessage("run-1", [{
      source: "builtin:old",
      reason: "unknownBuiltin",
    }]);
    expect(gone).toContain(
      "the built-in workflow old is no longer in this version of pi-workflows",
    );
    // An include of it in the project's file fails to load: accepting alone would fail too.
    expect(gone).toBe(
      "Resume refused: the built-in workflow old is no longer in this version of pi-workflows " +
        "since run run-1 started; this version has no builtin:old: remove its include from the " +
        `workflow file, then ${accept}; or resume under a version that has it; or ` +
        "'pi-workflows cancel run-1'",
    );
    for (const message of [revision, gone]) {
      expect(message).not.toMatch(/revisionChanged|unknownBuiltin|restore it/);
    }
  });

  it("the run's own built-in gone: no --accept-source (nothing to load), cancel or an older version", () => {
    const message = stillChangedMessage("run-1", [{
      source: "builtin:old",
      reason: "unknownBuiltin",
      root: true,
    }]);
    expect(message).toBe(
      "Resume refused: the built-in workflow old is no longer in this version of pi-workflows " +
        "since run run-1 started; the run cannot go on in this version: 'pi-workflows cancel " +
        "run-1', or resume it under a version that has its built-in",
    );
  });
});
