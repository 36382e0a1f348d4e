/**
 * What differs per platform before `node --build-sea` injects the application: the copy of that
 * platform's Node it starts from (stripped of symbols) and the V8 code caches of the embedded
 * bundles (only that platform's V8 accepts them). See docs/compile.md, "Other platforms'
 * executables".
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import vm from "node:vm";
import { isHostTarget, type Target } from "./targets.ts";

export interface CachedBundle {
  source: string;
  cache: string;
  /** The name V8 compiles the bundle under, as the launcher does (the asset's name). */
  filename: string;
}

/**
 * Writes each bundle's code cache for `target`: made in this process for this platform, by the
 * target's Node when it runs here (`env` not null: linux-arm64 under qemu), else left empty, and
 * the launcher then compiles the bundle from source at each start.
 */
export function writeCodeCaches(
  target: Target,
  node: string,
  env: NodeJS.ProcessEnv | null,
  bundles: CachedBundle[],
): void {
  if (isHostTarget(target)) {
    for (const b of bundles) {
      const script = new vm.Script(readFileSync(b.source, "utf8"), { filename: b.filename });
      writeFileSync(b.cache, script.createCachedData());
    }
  } else if (env) {
    const script = `const vm = require("node:vm"), fs = require("node:fs");
for (const b of ${JSON.stringify(bundles)}) {
  fs.writeFileSync(b.cache, new vm.Script(fs.readFileSync(b.source, "utf8"), { filename: b.filename }).createCachedData());
}`;
    execFileSync(node, ["-e", script], {
      env: { PATH: "/usr/bin:/bin", ...env },
      stdio: ["ignore", "ignore", "inherit"],
      timeout: 300_000,
    });
  } else {
    for (const b of bundles) writeFileSync(b.cache, "");
  }
}

/** The strip that reads `target`'s format: binutils' for this machine's own, llvm-strip else. */
function stripTools(target: Target): string[] {
  return isHostTarget(target) && target.os === "linux" ? ["strip", "llvm-strip"] : ["llvm-strip"];
}

/** A copy of `node` in `work`, stripped of symbols unless asked not to or impossible. */
export function baseExecutable(
  node: string,
  target: Target,
  work: string,
  strip: boolean,
): { path: string; stripped: boolean } {
  const base = join(work, "node-base");
  copyFileSync(node, base);
  if (!strip) return { path: base, stripped: false };
  for (const tool of stripTools(target)) {
    try {
      execFileSync(tool, ["--strip-all", base], { stdio: "ignore" });
      return { path: base, stripped: true };
    } catch {
      // Not on this machine (or not for this format): try the next one.
    }
  }
  // No strip for this format: the unstripped copy works the same, it is only larger.
  return { path: base, stripped: false };
}
