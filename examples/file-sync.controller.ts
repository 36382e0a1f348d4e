/**
 * A controller that keeps a target file equal to a source file.
 *
 *   pi-workflows controller apply examples/file-sync.controller.ts notes \
 *     --spec-json '{"source": "/tmp/notes.md", "target": "/tmp/notes-copy.md"}' --wait
 *   pi-workflows controller get file-sync notes
 *   pi-workflows controller delete file-sync notes --wait
 *
 * Each reconcile looks at the world and does the next step (level-triggered):
 *   - the target differs from the source: ensure a child workflow run (copy-file.workflow.ts)
 *     keyed by the source content, and settle; the child's end reconciles the resource again;
 *   - the target matches: record the synced content hash in a stamp file next to the target
 *     (a managed effect, read back after a crash so it never applies twice), set the Ready
 *     condition, and look again in a minute to catch drift;
 *   - the resource is being deleted: remove the target and the stamp (an effect), then clear the
 *     finalizer so the host removes the resource.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  conditionFalse,
  conditionTrue,
  conditionUnknown,
  defineController,
} from "@osolmaz/pi-workflows";

interface Spec {
  source: string;
  target: string;
}

interface Status {
  phase: "new" | "copying" | "synced" | "failed";
  hash?: string;
}

const COPY_WORKFLOW = fileURLToPath(new URL("./copy-file.workflow.ts", import.meta.url));
const FINALIZER = "file-sync/remove-target";

function hashOf(path: string): string | null {
  return existsSync(path) ? createHash("sha256").update(readFileSync(path)).digest("hex") : null;
}

export default defineController<Spec, Status>({
  name: "file-sync",
  timeoutMs: 30_000,
  initialStatus: (spec) => {
    if (typeof spec?.source !== "string" || typeof spec?.target !== "string") {
      throw new Error('the spec needs "source" and "target" paths');
    }
    return { phase: "new" };
  },
  async reconcile(ctx, resource) {
    const { source, target } = resource.spec;
    const stamp = `${target}.synced`;
    if (resource.metadata.deletionTimestamp) {
      await ctx.effects.ensure({
        key: "remove-target",
        kind: "file.remove",
        request: { target, stamp },
        // Removing again is harmless: after a crash mid-apply it simply runs again.
        idempotent: true,
        apply: () => {
          rmSync(target, { force: true });
          rmSync(stamp, { force: true });
          return { removed: true };
        },
      });
      return ctx.settled({ finalizers: [] });
    }
    const want = hashOf(source);
    if (want === null) {
      return ctx.requeueAfter(10_000, {
        conditions: [conditionFalse("Ready", "SourceMissing", `no file at ${source}`)],
        finalizers: [FINALIZER],
      });
    }
    if (hashOf(target) !== want) {
      const copy = await ctx.workflows.ensure({
        requestKey: `copy-${want}`,
        workflow: COPY_WORKFLOW,
        input: { from: source, to: target },
      });
      if (copy.state === "failed" || copy.state === "waiting") {
        return ctx.requeueAfter(30_000, {
          controllerStatus: { phase: "failed" },
          conditions: [conditionFalse("Ready", "CopyFailed", copy.error?.message ?? copy.state)],
          workflowRun: copy,
          finalizers: [FINALIZER],
        });
      }
      if (copy.state !== "succeeded") {
        // Settled for now: the child's end asks for the next reconcile.
        return ctx.settled({
          controllerStatus: { phase: "copying" },
          conditions: [conditionUnknown("Ready", "Copying", "a copy is running")],
          workflowRun: copy,
          finalizers: [FINALIZER],
        });
      }
      // The copy finished but the target changed again meanwhile: look again now.
      if (hashOf(target) !== want) return ctx.requeue({ workflowRun: copy });
    }
    await ctx.effects.ensure({
      key: `stamp-${want}`,
      kind: "file.write",
      request: { stamp, hash: want },
      observe:
        () => (existsSync(stamp) && readFileSync(stamp, "utf8") === want ? { hash: want } : null),
      apply: () => {
        writeFileSync(stamp, want);
        return { hash: want };
      },
    });
    return ctx.requeueAfter(60_000, {
      controllerStatus: { phase: "synced", hash: want },
      conditions: [conditionTrue("Ready", "Synced", "the target matches the source")],
      finalizers: [FINALIZER],
    });
  },
});
