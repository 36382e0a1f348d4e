/**
 * Shared set-up of the real-Pi end-to-end tests: a sandbox with the package installed by
 * `pi install <checkout>`, the project's workflows, a fake model driven by a per-test script,
 * and small readers for what Pi showed and what the session holds.
 */
import { cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type FakeModel, type FakeScript, startFakeModel } from "../support/fake-model.ts";
import { createPiSandbox, type PiSandbox, REPO_ROOT } from "../support/pi-sandbox.ts";
import type { PiRpc, RpcRecord } from "../support/pi-rpc.ts";
import { runCliProcess } from "../support/host.ts";

const FIXTURES = fileURLToPath(new URL("./fixtures/workflows", import.meta.url));

export interface E2eWorld {
  model: FakeModel;
  sandbox: PiSandbox;
  /** Replace to change how the model answers from now on. */
  script: FakeScript;
}

/** A fake model whose script the test can swap, and a sandbox with the package installed. */
export async function createWorld(env: Record<string, string> = {}): Promise<E2eWorld> {
  const world = {} as E2eWorld;
  world.script = () => ({ kind: "text", text: "Nothing to do." });
  world.model = await startFakeModel({
    script: (request) => world.script(request),
    lifetimeMs: 240_000,
  });
  world.sandbox = createPiSandbox({ modelBaseUrl: world.model.baseUrl, env });
  const workflows = join(world.sandbox.project, ".pi", "workflows");
  mkdirSync(join(workflows, "lib"), { recursive: true });
  for (const name of ["two-turn-agent", "human-decision", "checkpoint"]) {
    cpSync(
      join(REPO_ROOT, "examples", `${name}.workflow.ts`),
      join(workflows, `${name}.workflow.ts`),
    );
  }
  for (const name of ["slow-step", "next-after-timeout", "talk", "fix-and-go"]) {
    cpSync(join(FIXTURES, `${name}.workflow.ts`), join(workflows, `${name}.workflow.ts`));
  }
  await world.sandbox.install(REPO_ROOT);
  return world;
}

export async function destroyWorld(world: E2eWorld | undefined): Promise<void> {
  if (!world) return;
  await world.sandbox?.cleanup();
  await world.model?.close();
}

/** Runs the CLI against the sandbox's state (`doctor`, `host status`, ...). */
export function cli(world: E2eWorld, args: string[]) {
  return runCliProcess(args, world.sandbox.env, 30_000);
}

export function isNotice(record: RpcRecord, pattern: RegExp): boolean {
  return record.type === "extension_ui_request" && record.method === "notify" &&
    pattern.test(String(record.message));
}

/** `/workflow <args>`, then the run id from the "Started workflow" notice. */
export async function startWorkflow(pi: PiRpc, args: string): Promise<string> {
  const from = pi.records.length;
  await pi.prompt(`/workflow ${args}`, 60_000);
  const started = await pi.waitFor(
    (r) => isNotice(r, /^Started workflow /) || isNotice(r, /^\/workflow: /),
    {
      from,
      what: "the start notice",
    },
  );
  const match = /\((run-[^)]+)\)/.exec(String(started.message));
  if (!match) throw new Error(`Workflow did not start: ${started.message}`);
  return match[1];
}

export interface SessionEntry {
  type: string;
  id: string;
  customType?: string;
  details?: { kind?: string; interactionId?: string; decisionId?: string };
}

export async function sessionEntries(pi: PiRpc): Promise<SessionEntry[]> {
  const response = await pi.command({ type: "get_entries" });
  return (response.data as { entries: SessionEntry[] }).entries;
}

/** This extension's step messages in the session, by interaction id. */
export function stepEntries(entries: SessionEntry[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const entry of entries) {
    if (entry.type !== "custom_message" || entry.customType !== "pi-workflows") continue;
    if (entry.details?.kind !== "step" || !entry.details.interactionId) continue;
    out.set(entry.details.interactionId, [
      ...(out.get(entry.details.interactionId) ?? []),
      entry.id,
    ]);
  }
  return out;
}
