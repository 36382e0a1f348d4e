/**
 * `/workflow rerun` and `/workflow retry`: fork a run at a node (`run.rerun`), from this session.
 * The parent defaults to this session's run. A fork of an interactive run runs in this session
 * (the host binds it here, under the session reservation), so the session follows it and its
 * next step is presented like a started run's; a fork of a headless run stays headless with the
 * parent's Pi and model arguments, and gets this Pi's environment and provider keys as a CLI
 * rerun gets its shell's.
 */
import { providerCredentials } from "../base/credential-names.ts";
import { runEnvironment } from "../protocol/run-environment.ts";
import { forkOriginText, retryMeaning } from "../render/rerun-text.ts";
import type { RerunArgs } from "./rerun-args.ts";
import { resolveRunId } from "./workflow-actions.ts";
import type { WorkflowSession } from "./workflow-session.ts";

export async function rerunRun(
  session: WorkflowSession,
  args: RerunArgs,
  options: { canRunHere: boolean; requestId?: string },
): Promise<string> {
  session.link();
  const parentId = resolveRunId(session, args.runId);
  if (!options.canRunHere) {
    // Print mode: this session ends with the prompt, so a fork whose steps would run in it would
    // wait for a session that never comes back. A headless parent's fork runs without it.
    const parent = await session.client.call("run.status", { runId: parentId });
    if (parent.run.executionMode === "interactive") {
      throw new Error(
        `run ${parentId} is interactive: its fork would run its steps in this Pi session, which ends with this prompt (print mode); rerun it from an interactive Pi session`,
      );
    }
  }
  const receipt = await session.client.call("run.rerun", {
    runId: parentId,
    requestId: options.requestId,
    payload: {
      ...(args.retry ? { retry: true } : {}),
      ...(args.from !== null ? { from: args.from } : {}),
      ...(args.visit !== null ? { visit: args.visit } : {}),
      ...(args.source !== null ? { source: args.source } : {}),
      ...(args.input !== undefined ? { input: args.input } : {}),
      // Used by the host only when the parent is interactive: the fork runs its steps here.
      originSessionId: session.sessionId,
      env: runEnvironment(process.env, {}),
      credentials: providerCredentials(process.env),
    },
  });
  const fork = receipt.run;
  if (fork.executionMode === "interactive") session.runs.follow(fork.runId);
  void session.sync();
  const where = fork.executionMode === "interactive"
    ? "its steps run in this session"
    : "headless, with its parent's Pi and model arguments";
  return [
    ...(args.retry
      ? [`/workflow retry ${parentId} ${retryMeaning(receipt.from, "/workflow rerun")}`]
      : []),
    `Forked workflow ${fork.workflowName} (${fork.runId}): ${where}`,
    forkOriginText(receipt),
  ].join("\n");
}
