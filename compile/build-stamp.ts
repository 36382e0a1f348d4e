/**
 * The stamp a build writes into the program for `--version`: the commit of the checkout it is
 * built from (and whether tracked files had changes), and the build time. SOURCE_DATE_EPOCH, when
 * set, fixes the time so two builds of one commit can be compared byte for byte.
 */
import { spawnSync } from "node:child_process";
import type { BuildStamp } from "../src/base/build-info.ts";

export function buildStamp(
  root: string,
  kind: BuildStamp["kind"],
  env: NodeJS.ProcessEnv = process.env,
): BuildStamp {
  const commit = git(root, ["rev-parse", "HEAD"]);
  const changes = commit === null
    ? null
    : git(root, ["status", "--porcelain", "--untracked-files=no"]);
  const epoch = Number(env.SOURCE_DATE_EPOCH);
  const at = env.SOURCE_DATE_EPOCH && Number.isInteger(epoch) ? new Date(epoch * 1000) : new Date();
  return {
    kind,
    commit,
    dirty: changes !== null && changes !== "",
    date: at.toISOString().replace(/\.\d{3}Z$/, "Z"),
  };
}

/** esbuild `define` entries that write the stamp into a bundle. */
export function stampDefine(stamp: BuildStamp): Record<string, string> {
  return { PI_WORKFLOWS_BUILD: JSON.stringify(stamp) };
}

function git(cwd: string, args: string[]): string | null {
  const result = spawnSync("git", args, {
    cwd,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  return result.status === 0 ? result.stdout.trim() : null;
}
