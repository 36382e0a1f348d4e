/**
 * Copies one file (used as the child workflow of examples/file-sync.controller.ts): a compute
 * step checks the input, a shell step copies through a temporary file and renames it, so the
 * target never holds half a copy.
 *
 *   pi-workflows start examples/copy-file.workflow.ts --input-json '{"from": "/tmp/a", "to": "/tmp/b"}' --wait
 */
import { compute, defineWorkflow, shell } from "@osolmaz/pi-workflows";

export default defineWorkflow({
  name: "copy-file",
  title: "Copy a file",
  input: (raw) => {
    const { from, to } = (raw ?? {}) as { from?: unknown; to?: unknown };
    if (typeof from !== "string" || !from.startsWith("/")) {
      throw new Error("from: an absolute path");
    }
    if (typeof to !== "string" || !to.startsWith("/")) throw new Error("to: an absolute path");
    return { from, to };
  },
  startAt: "plan",
  nodes: {
    plan: compute({ run: ({ input }) => ({ ...input, partial: `${input.to}.partial` }) }),
    copy: shell({
      timeoutMs: 30_000,
      exec: ({ outputs }) => {
        const { from, to, partial } = outputs.plan as { from: string; to: string; partial: string };
        return {
          command: "sh",
          args: ["-c", 'cp "$1" "$2" && mv "$2" "$3"', "copy", from, partial, to],
        };
      },
      parse: () => ({ copied: true }),
    }),
  },
  edges: [{ from: "plan", to: "copy" }],
});
