/**
 * Collecting what changed in a git work tree, and the output of evidence commands, with one
 * command batch: what sanity-check reviews and autoimplement verifies. Outputs are cut so the
 * prompts that carry them stay bounded.
 */
import { type CommandBatchItemResult, runCommandBatch } from "../command-batch.ts";
import { NodeFailure } from "../errors.ts";
import type { ActionContext } from "../types.ts";
import { PROGRESS_SCHEMA } from "../updates.ts";
import type { EvidenceCommand } from "./builtin-input.ts";

export interface EvidenceResult {
  id: string;
  command: string;
  outcome: CommandBatchItemResult["outcome"];
  exitCode: number | null;
  /** The last lines of stdout and stderr. */
  tail: string;
}

const MAX_DIFF_CHARS = 60_000;
const TAIL_CHARS = 4_000;

/** Runs commands in the project (bounded, in parallel), one progress update per settled item. */
export async function runEvidence(
  ctx: ActionContext,
  commands: EvidenceCommand[],
  options: { key: string; timeoutMs: number },
): Promise<EvidenceResult[]> {
  if (commands.length === 0) return [];
  const batch = await runCommandBatch(
    {
      items: commands.map((c) => ({
        id: c.id,
        command: c.command,
        args: c.args,
        cwd: ctx.state.projectPath,
        timeoutMs: options.timeoutMs,
        maxOutputChars: 200_000,
      })),
      maxConcurrency: 4,
    },
    {
      signal: ctx.signal,
      onItemSettled: (_item, completed, total) =>
        ctx.publishUpdate({
          type: "progress",
          key: options.key,
          data: { schema: PROGRESS_SCHEMA, completed, total, unit: "commands" },
        }),
    },
  );
  return batch.items.map((item) => ({
    id: item.id,
    command: [item.command, ...item.args].join(" "),
    outcome: item.outcome,
    exitCode: item.exitCode,
    tail: tail(`${item.stdout}\n${item.stderr}`.trim()),
  }));
}

export interface ChangeSet {
  base: string;
  stat: string;
  diff: string;
  diffTruncated: boolean;
  untracked: string[];
}

/** The diff of the work tree (tracked changes against `base`, untracked files by name). */
export async function collectChanges(ctx: ActionContext, base: string): Promise<ChangeSet> {
  const git = (id: string, args: string[]) => ({
    id,
    command: "git",
    args,
    cwd: ctx.state.projectPath,
    timeoutMs: 60_000,
    maxOutputChars: 1_000_000,
  });
  const batch = await runCommandBatch({
    items: [
      git("stat", ["diff", "--stat", base, "--"]),
      git("diff", ["diff", base, "--"]),
      git("untracked", ["ls-files", "--others", "--exclude-standard"]),
    ],
  }, { signal: ctx.signal });
  const [stat, diff, untracked] = batch.items;
  const failed = batch.items.find((i) => i.outcome !== "succeeded");
  if (failed) {
    throw new NodeFailure(
      "gitFailed",
      `git ${failed.args.join(" ")} failed (${failed.error ?? `exit ${failed.exitCode}`}): ${
        failed.stderr.trim().slice(0, 300)
      }`,
    );
  }
  return {
    base,
    stat: stat.stdout.trim(),
    diff: diff.stdout.slice(0, MAX_DIFF_CHARS),
    diffTruncated: diff.stdout.length > MAX_DIFF_CHARS || diff.stdoutTruncated,
    untracked: untracked.stdout.split("\n").filter((l) => l.length > 0).slice(0, 500),
  };
}

function tail(text: string): string {
  return text.length > TAIL_CHARS ? `[...]\n${text.slice(-TAIL_CHARS)}` : text;
}

/** The change set and evidence as prompt text. */
export function changesText(changes: ChangeSet, evidence: EvidenceResult[]): string {
  const parts = [
    `Changes against ${changes.base}:\n${changes.stat || "(no tracked changes)"}`,
    changes.untracked.length > 0 ? `Untracked files:\n${changes.untracked.join("\n")}` : "",
    `Diff${
      changes.diffTruncated
        ? ` (cut at ${MAX_DIFF_CHARS} characters; read the files for the rest)`
        : ""
    }:\n` +
    "```diff\n" + changes.diff + "\n```",
    ...evidence.map((e) =>
      `Evidence ${e.id}: \`${e.command}\` ${e.outcome} (exit ${e.exitCode}):\n\`\`\`\n${e.tail}\n\`\`\``
    ),
  ];
  return parts.filter((p) => p.length > 0).join("\n\n");
}
