/**
 * What `pi-workflows --version` reports beside the version: which commit a build was made from
 * and when. The build (compile/) replaces `PI_WORKFLOWS_BUILD` with a literal; the TypeScript
 * source run from a checkout has none and says so. It lives in base/, next to VERSION, because
 * the executable's launcher answers `--version` before the CLI loads.
 */
import { VERSION } from "./version.ts";

/** Set by the build as a literal (esbuild `define`); undeclared when the source runs as is. */
declare const PI_WORKFLOWS_BUILD: BuildStamp | undefined;

/** What the build writes into the program. */
export interface BuildStamp {
  /** `executable` (the single file), `npm` (the package's bundle). */
  kind: "executable" | "npm";
  /** The full commit id, or null when the build was not made in a git checkout. */
  commit: string | null;
  /** The tree had uncommitted changes to tracked files when it was built. */
  dirty: boolean;
  /** ISO time of the build (SOURCE_DATE_EPOCH when set), seconds precision. */
  date: string;
}

export interface BuildInfo {
  version: string;
  build: BuildStamp["kind"] | "source";
  commit: string | null;
  dirty: boolean;
  date: string | null;
}

export function buildInfo(): BuildInfo {
  const stamp = typeof PI_WORKFLOWS_BUILD === "undefined" ? undefined : PI_WORKFLOWS_BUILD;
  if (stamp === undefined) {
    return { version: VERSION, build: "source", commit: null, dirty: false, date: null };
  }
  return { version: VERSION, build: stamp.kind, ...stamp };
}

/** `0.13.0 (commit 1a2b3c4d5e6f, built 2026-12-01T12:00:00Z)`; the version is the first word. */
export function versionText(info: BuildInfo = buildInfo()): string {
  if (info.build === "source") return `${info.version} (from source)`;
  const commit = info.commit === null
    ? "no commit"
    : `commit ${info.commit.slice(0, 12)}${info.dirty ? "+dirty" : ""}`;
  return `${info.version} (${commit}, built ${info.date})`;
}

/** One line of JSON for scripts, keys sorted as all of the CLI's JSON is. */
export function versionJson(info: BuildInfo = buildInfo()): string {
  const { build, commit, date, dirty, version } = info;
  return JSON.stringify({ build, commit, date, dirty, version });
}
