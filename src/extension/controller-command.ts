/**
 * `/controller`: list, get, apply, reconcile, delete the controller resources of this session's
 * project (`ctx.cwd`) through the host's `controller.*` operations; `bind` approves this session
 * for a controller's interactive child runs (only the session itself can name its id), `unbind`
 * revokes that. Each answers at once with a
 * notice; after apply, reconcile or delete the resource is followed in the background and one
 * more notice says how it ended (settled, failing, controller blocked, removed, or still busy
 * after FOLLOW_MS). Errors are one line.
 */
import { HostCommandError } from "../client/command-receipt.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";
import {
  formatBound,
  formatControllerList,
  formatResourceDetail,
  formatResourceHeadline,
  formatResourceName,
  formatUnbound,
  resourceProgress,
} from "../render/controller-text.ts";
import { CommandArgsError } from "./command-args.ts";
import { commandNotice, type NoticeLevel as Level } from "./command-notice.ts";
import {
  CONTROLLER_USAGE,
  type ControllerCommand,
  parseControllerArgs,
} from "./controller-args.ts";
import { errorLine } from "./error-line.ts";
import type { PiCommand, PiContext } from "./pi-api.ts";
import type { WorkflowSession } from "./workflow-session.ts";

/** How long a followed resource may stay busy before the follow gives up (the host goes on). */
export const FOLLOW_MS = 120_000;
const POLL_MS = 250;

/** The `/controller` registration (`pi.registerCommand("controller", ...)`). */
export function controllerCommand(session: () => WorkflowSession | null): PiCommand {
  return {
    description: `Controller resources. ${CONTROLLER_USAGE.replace(/^Usage: /, "")}`,
    handler: (args: string, ctx: PiContext) => runControllerCommand(session(), args, ctx),
  };
}

export async function runControllerCommand(
  session: WorkflowSession | null,
  args: string,
  ctx: PiContext,
): Promise<void> {
  const say = commandNotice(ctx);
  try {
    const command = parseControllerArgs(args);
    if (!session) throw new Error("Controllers are not available: this Pi session has not started");
    session.touch(ctx);
    session.link();
    const followed = await execute(session, command, session.cwd, say);
    if (followed) void follow(session, followed, command.action === "delete");
  } catch (error) {
    say(
      error instanceof CommandArgsError ? error.message : `/controller: ${errorLine(error)}`,
      "error",
    );
  }
}

interface Followed {
  cwd: string;
  controller: string;
  key: string;
}

/** Runs the command, shows its answer; returns the resource to follow, if any. */
async function execute(
  session: WorkflowSession,
  command: ControllerCommand,
  cwd: string,
  say: (text: string, level?: Level) => void,
): Promise<Followed | null> {
  const client = session.client;
  const cas = (expectVersion: number | null) =>
    expectVersion === null ? {} : { expectedRevision: expectVersion };
  switch (command.action) {
    case "bind": {
      const receipt = await client.call("controller.bind", {
        payload: { cwd, controller: command.controller, sessionId: session.sessionId },
      });
      say(formatBound(receipt));
      return null;
    }
    case "unbind": {
      const receipt = await client.call("controller.unbind", {
        payload: { cwd, controller: command.controller },
      });
      say(formatUnbound(receipt));
      return null;
    }
    case "list": {
      const receipt = await client.call("controller.list", {
        payload: { cwd, ...(command.controller ? { controller: command.controller } : {}) },
      });
      say(formatControllerList(receipt, Date.now()));
      return null;
    }
    case "get": {
      const payload = { cwd, controller: command.controller, key: command.key };
      say(formatResourceDetail(await client.call("controller.get", { payload }), Date.now()));
      return null;
    }
    case "apply": {
      const receipt = await client.call("controller.apply", {
        payload: {
          cwd,
          controller: command.controller,
          key: command.key,
          ...(command.spec !== undefined ? { spec: command.spec } : {}),
          ...(command.digest ? { sourceDigest: command.digest } : {}),
        },
        ...cas(command.expectVersion),
      });
      const what = receipt.created ? "Created" : receipt.changed ? "Updated" : "Unchanged";
      say(`${what} ${formatResourceName(receipt.resource)}`);
      // The receipt names the controller (apply may have been given a path).
      return { cwd, controller: receipt.resource.metadata.controller, key: command.key };
    }
    case "reconcile": {
      const target = { cwd, controller: command.controller, key: command.key };
      const receipt = await client.call("controller.reconcile", {
        payload: {
          ...target,
          ...(command.resolveEffect ? { resolveEffect: command.resolveEffect } : {}),
        },
        ...cas(command.expectVersion),
      });
      const resolved = receipt.resolvedEffect;
      if (resolved) say(`Effect ${resolved.effectId} is ${resolved.state} now`);
      say(`Reconcile requested for ${command.controller}/${command.key}`);
      return target;
    }
    case "delete": {
      const payload = { cwd, controller: command.controller, key: command.key };
      const receipt = await client.call("controller.delete", {
        payload,
        ...cas(command.expectVersion),
      });
      if (receipt.removed) {
        say(`Deleted ${command.controller}/${command.key}`);
        return null;
      }
      say(
        `Deleting ${command.controller}/${command.key}: waiting for its finalizers (${
          receipt.resource.metadata.finalizers.join(", ")
        })`,
      );
      return payload;
    }
  }
}

/**
 * Polls `controller.get` until the resource settles, fails, is blocked or (`gone`) removed, then
 * shows one notice. Stops quietly when the session closes; a lost host ends it with one line.
 */
async function follow(session: WorkflowSession, target: Followed, gone: boolean): Promise<void> {
  const say = (text: string, level: Level = "info") => session.ui()?.notify(text, level);
  const name = `${target.controller}/${target.key}`;
  const deadline = Date.now() + FOLLOW_MS;
  try {
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      if (session.closed) return;
      let detail: OperationReceipt<"controller.get">;
      try {
        detail = await session.client.call("controller.get", { payload: { ...target, events: 0 } });
      } catch (error) {
        const removed = error instanceof HostCommandError && error.outcome === "notFound";
        if (gone && removed) return say(`Deleted ${name}`);
        throw error;
      }
      const now = Date.now();
      const progress = resourceProgress(detail, now);
      const line = formatResourceHeadline(detail.resource, detail.queue, now);
      if (progress === "blocked") {
        return say(
          `${line}; controller blocked: ${detail.controller.blockedReason}${
            detail.controller.blockedDetail ? ` (${detail.controller.blockedDetail})` : ""
          }`,
          "warning",
        );
      }
      if (progress === "failing") {
        const last = detail.queue?.lastError;
        return say(`${line}${last ? `; last error ${last.code}: ${last.message}` : ""}`, "error");
      }
      if (progress === "settled" && !gone) return say(line);
      if (now >= deadline) {
        return say(
          `${line}; still busy after ${
            FOLLOW_MS / 1000
          } s (it goes on in the host: /controller get ${target.controller} ${target.key})`,
          "warning",
        );
      }
    }
  } catch (error) {
    if (!session.closed) say(`/controller ${name}: ${errorLine(error)}`, "error");
  }
}
