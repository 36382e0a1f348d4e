/**
 * The retention pass's kept descriptors (src/state/retention/held-files.ts): one is let go only
 * once its path names no file or another, never on a stat that fails otherwise, since closing the
 * open database's descriptor would drop the process's SQLite locks on it.
 */
import {
  fstatSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { heldDescriptor } from "../../src/state/retention/held-files.ts";

let root: string | undefined;
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

describe("held descriptors", () => {
  it("keep their file while a stat of its path fails for another reason than its absence", () => {
    root = mkdtempSync(join(tmpdir(), "piw-held-"));
    const dir = join(root, "state");
    const aside = join(root, "aside");
    writeFileSync(join(root, "other"), "other");
    const file = join(dir, "state.sqlite");
    // The state file in its directory, held.
    mkdirSync(dir);
    writeFileSync(file, "database");
    const fd = heldDescriptor(file)!;
    const ino = statSync(file).ino;
    // The directory moved aside and its name a link to itself: a stat of the path says ELOOP.
    renameSync(dir, aside);
    symlinkSync(dir, dir);
    expect(() => statSync(file)).toThrow(/ELOOP/);
    // Another path's first use sweeps the held ones: this one must stay open on its file.
    heldDescriptor(join(root, "other"));
    expect(fstatSync(fd).ino).toBe(ino);
    // Back in place: the same descriptor.
    rmSync(dir);
    renameSync(aside, dir);
    expect(heldDescriptor(file)).toBe(fd);
    // Gone: let go at the next sweep.
    rmSync(file);
    expect(heldDescriptor(file)).toBeNull();
  });
});
