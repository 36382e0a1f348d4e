/**
 * Preloaded (`node --import`) into the CLI processes tests start from source, and through the
 * CLI's self-launch (which keeps the parent's Node flags) into the hosts they start: Node's compile
 * cache in one directory every test shares, so a CLI or host start does not compile the whole CLI
 * from source again (about half of its CPU time). The code that runs is the same; a process
 * whose environment names a cache (workers and resolvers: the state directory's, see
 * src/host/supervision/children/child-environment.ts) keeps that one, as enabling again does
 * nothing there.
 */
import { enableCompileCache } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

enableCompileCache(join(tmpdir(), "pi-workflows-test-compile-cache"));
