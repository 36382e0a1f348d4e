/**
 * `effect resolve`: sends the operator's verdict on an ambiguous effect (`effect.resolve`) and
 * prints what the host recorded. The operator defaults to this user's login name.
 */
import { receiptOf } from "../client/command-receipt.ts";
import { operatorName } from "../client/operator-name.ts";
import type { HostConnection } from "../client/host-connection.ts";
import { EXIT } from "./exit-codes.ts";
import { formatRunHeadline } from "./format-run.ts";
import { type CliIo, printJson } from "./output.ts";
import type { EffectResolveCommand } from "./parse-effect.ts";

const VERDICT_TEXT = {
  applied: "applied: its output was adopted as the node's result",
  notApplied: "not applied: the node runs again",
  retry: "unknown, retried: the node runs again",
} as const;

const ENDED_TEXT = {
  applied: "applied: its output is the effect's receipt",
  notApplied: "not applied",
  retry: "retried",
} as const;

export async function effectResolveCommand(
  connection: HostConnection,
  command: EffectResolveCommand,
  io: CliIo,
): Promise<number> {
  const receipt = receiptOf(
    "effect.resolve",
    await connection.request("effect.resolve", {
      runId: command.runId,
      payload: {
        target: command.target,
        verdict: command.verdict,
        ...(command.output !== undefined ? { output: command.output } : {}),
        operator: command.operator ?? operatorName(),
      },
    }),
  );
  if (command.json) printJson(io, receipt);
  else {
    const r = receipt.resolution;
    if (r.ended) {
      io.out(
        `Recorded: node ${r.nodeId} (attempt ${r.attemptId}) ${ENDED_TEXT[r.verdict]}; the run ` +
          "had ended, so nothing runs again",
      );
      io.out(formatRunHeadline(receipt.run));
    } else {
      io.out(`Recorded: node ${r.nodeId} (attempt ${r.attemptId}) ${VERDICT_TEXT[r.verdict]}`);
      io.out(`Resumed ${formatRunHeadline(receipt.run)}`);
    }
  }
  return EXIT.ok;
}
