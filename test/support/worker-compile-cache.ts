/**
 * One compile cache for the children (workers, resolvers, warm-ups) of every host and
 * supervision harness the tests of this checkout start. A host keeps its children's cache in
 * its state directory (`compile-cache`): each test's fresh one started cold, and a host spent a
 * `worker --warm` child (about a CPU second) filling it. The state directory's `compile-cache`
 * becomes a link to the shared one, so the children see the path a host gives them (the test
 * kit's hosts share a cache the same way, src/testing/kit-host.ts). Node writes each entry
 * through a temp file and a rename, so concurrent writers are safe.
 */
import { createHash } from "node:crypto";
import { mkdirSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const CHECKOUT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** Per checkout: a host's warm-up marker names the checkout's worker entry. */
export const SHARED_WORKER_CACHE = join(
  tmpdir(),
  `pi-workflows-test-worker-cache-${
    createHash("sha256").update(CHECKOUT).digest("hex").slice(0, 12)
  }`,
);

/** Creates `stateDir` (0700) with its `compile-cache` linked to the shared cache. */
export function shareWorkerCompileCache(stateDir: string): void {
  mkdirSync(SHARED_WORKER_CACHE, { recursive: true, mode: 0o700 });
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  symlinkSync(SHARED_WORKER_CACHE, join(stateDir, "compile-cache"));
}
