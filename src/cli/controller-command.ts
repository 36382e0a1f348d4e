/**
 * `pi-workflows controller list|get|apply|reconcile|delete|unbind`: requests to the host (started on
 * demand) for the project in `--cwd` (default: the current directory). `--wait` follows the
 * resource by polling `controller.get` until it is quiet (its generation reconciled, nothing due
 * within a second, no child workflow running) or gone (delete), a reconcile failed, or its
 * controller is blocked; the exit code says which.
 */
import { readFileSync } from "node:fs";
import { receiptOf } from "../client/command-receipt.ts";
import { type HostClient, isRetryableAnswer } from "../client/host-client.ts";
import { HostUnavailableError } from "../protocol/failures.ts";
import type { HostResponse } from "../protocol/host-response.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { parseJsonText } from "../protocol/json-depth.ts";
import { EXIT, UsageError } from "./exit-codes.ts";
import {
  formatControllerList,
  formatResourceDetail,
  formatResourceName,
  formatUnbound,
  resourceProgress,
} from "../render/controller-text.ts";
import { type CliIo, printJson } from "./output.ts";
import { projectDir } from "./project-dir.ts";
import { withHost } from "./with-host.ts";
import { shortRunId } from "./run-ids.ts";
import { clientStateDir } from "../client/socket-path.ts";
import type { PiLaunch } from "../protocol/pi-launch.ts";
import { discoverPi } from "../worker/pi-command.ts";
import type { ControllerCommand } from "./parse-controller.ts";

const POLL_MS = 150;

type ResourceDetailReceipt = OperationReceipt<"controller.get">;

export async function runControllerCommand(
  command: ControllerCommand,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const cwd = projectDir(command.cwd);
  const spec = readSpec(command);
  let pi: PiLaunch | null = null;
  if (command.action === "apply") {
    // The Pi the controller's child runs use for agent steps, found in the user's environment.
    const found = discoverPi({ env, stateDir: clientStateDir(env), cwd: process.cwd() });
    if (found.ok) pi = { command: found.pi.command, args: command.piArgs };
    else if (found.code === "invalidConfig" || command.piArgs.length > 0) {
      io.err(found.message);
      return EXIT.piUnavailable;
    }
  }
  return await withHost(env, io, (connection) => execute(connection, command, cwd, spec, pi, io));
}

async function execute(
  connection: HostClient,
  command: ControllerCommand,
  cwd: string,
  spec: JsonValue,
  pi: PiLaunch | null,
  io: CliIo,
): Promise<number> {
  const controller = command.controller!;
  const key = command.key!;
  const expected = command.expectVersion === null
    ? {}
    : { expectedRevision: command.expectVersion };
  switch (command.action) {
    case "list": {
      const receipt = receiptOf(
        "controller.list",
        await connection.request("controller.list", {
          payload: { cwd, ...(command.controller ? { controller: command.controller } : {}) },
        }),
      );
      if (command.json) printJson(io, receipt);
      else io.out(formatControllerList(receipt, Date.now()));
      return EXIT.ok;
    }
    case "get": {
      const receipt = receiptOf(
        "controller.get",
        await connection.request("controller.get", { payload: { cwd, controller, key } }),
      );
      if (command.json) printJson(io, receipt);
      else io.out(formatResourceDetail(receipt, Date.now(), shortRunId));
      return EXIT.ok;
    }
    case "apply": {
      const receipt = receiptOf(
        "controller.apply",
        await connection.request("controller.apply", {
          payload: {
            cwd,
            controller,
            key,
            spec,
            ...(command.digest ? { sourceDigest: command.digest } : {}),
            ...(pi ? { pi } : {}),
          },
          ...expected,
        }),
      );
      const name = receipt.resource.metadata.controller;
      if (!command.json) {
        const what = receipt.created ? "Created" : receipt.changed ? "Updated" : "Unchanged";
        io.out(`${what} ${formatResourceName(receipt.resource)}`);
      }
      if (command.wait) return await waitSettled(connection, command, cwd, name, key, io);
      if (command.json) printJson(io, receipt);
      return EXIT.ok;
    }
    case "reconcile": {
      const receipt = await resourceRequest(connection, "controller.reconcile", cwd, command);
      if (!command.json && receipt.resolvedEffect) {
        io.out(`Effect ${receipt.resolvedEffect.effectId} is ${receipt.resolvedEffect.state} now`);
      }
      if (!command.json) io.out(`Reconcile requested for ${controller}/${key}`);
      // A resource being deleted never settles: it is followed until it is gone.
      if (command.wait && receipt.resource.metadata.deletionTimestamp) {
        return await waitGone(connection, command, cwd, controller, key, io);
      }
      if (command.wait) return await waitSettled(connection, command, cwd, controller, key, io);
      if (command.json) printJson(io, receipt);
      return EXIT.ok;
    }
    case "delete": {
      const receipt = await resourceRequest(connection, "controller.delete", cwd, command);
      const finalizers = receipt.resource.metadata.finalizers;
      if (!command.json) {
        io.out(
          receipt.removed
            ? `Deleted ${controller}/${key}`
            : `Deleting ${controller}/${key}: waiting for its finalizers (${
              finalizers.join(", ")
            })`,
        );
      }
      if (command.wait && !receipt.removed) {
        return await waitGone(connection, command, cwd, controller, key, io);
      }
      if (command.json) printJson(io, receipt);
      return EXIT.ok;
    }
    case "unbind": {
      const receipt = receiptOf(
        "controller.unbind",
        await connection.request("controller.unbind", { payload: { cwd, controller } }),
      );
      if (command.json) printJson(io, receipt);
      else io.out(formatUnbound(receipt));
      return EXIT.ok;
    }
  }
}

async function resourceRequest<Op extends "controller.reconcile" | "controller.delete">(
  connection: HostClient,
  operation: Op,
  cwd: string,
  command: ControllerCommand,
) {
  return receiptOf(
    operation,
    await connection.request(operation, {
      payload: {
        cwd,
        controller: command.controller!,
        key: command.key!,
        ...(operation === "controller.reconcile" && command.resolveEffect
          ? { resolveEffect: command.resolveEffect }
          : {}),
      },
      ...(command.expectVersion === null ? {} : { expectedRevision: command.expectVersion }),
    } as never),
  );
}

/** Polls until the resource settled, failed a reconcile, or its controller is blocked. */
async function waitSettled(
  connection: HostClient,
  command: ControllerCommand,
  cwd: string,
  controller: string,
  key: string,
  io: CliIo,
): Promise<number> {
  const deadline = Date.now() + command.timeoutSeconds * 1000;
  let detail: ResourceDetailReceipt | null = null;
  const show = (code: number, note?: string) => {
    printWaitEnd(io, command, detail, note);
    return code;
  };
  for (;;) {
    const response = await pollUntil(connection, cwd, controller, key, deadline);
    if (response === null) return show(EXIT.runNeedsAttention, notSettled(command));
    detail = receiptOf("controller.get", response);
    const progress = resourceProgress(detail, Date.now());
    if (progress === "blocked") return show(EXIT.runNeedsAttention);
    if (progress === "failing") return show(EXIT.runUnsuccessful);
    if (progress === "settled") return show(EXIT.ok);
    if (Date.now() >= deadline) return show(EXIT.runNeedsAttention, notSettled(command));
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function waitGone(
  connection: HostClient,
  command: ControllerCommand,
  cwd: string,
  controller: string,
  key: string,
  io: CliIo,
): Promise<number> {
  const deadline = Date.now() + command.timeoutSeconds * 1000;
  let detail: ResourceDetailReceipt | null = null;
  for (;;) {
    const response = await pollUntil(connection, cwd, controller, key, deadline);
    if (response?.outcome === "notFound") {
      if (command.json) printJson(io, { removed: true });
      else io.out(`Deleted ${controller}/${key}`);
      return EXIT.ok;
    }
    if (response !== null) detail = receiptOf("controller.get", response);
    const errors = detail?.queue?.consecutiveErrors ?? 0;
    // A blocked controller runs no finalizer until its source is right: no use waiting.
    const blocked = detail !== null && resourceProgress(detail, Date.now()) === "blocked";
    const timedOut = response === null || Date.now() >= deadline;
    if (timedOut || errors || blocked) {
      printWaitEnd(
        io,
        command,
        detail,
        timedOut && !errors && !blocked ? notGone(command) : undefined,
      );
      return errors ? EXIT.runUnsuccessful : EXIT.runNeedsAttention;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/**
 * One `controller.get` of a --wait, retried while no host answers only until the wait's own
 * deadline (not the client's 60 s): null when the deadline passed without an answer, which ends
 * the wait as its timeout does. A host that is stopping, or one older than the last seen, is no
 * answer either: the client hands back its last such answer when its own retry window ends, which
 * a --timeout above it outlasts, so before the wait's deadline it is asked again (each request
 * retries with the client's backoff; a poll's pause between them).
 */
async function pollUntil(
  connection: HostClient,
  cwd: string,
  controller: string,
  key: string,
  deadline: number,
): Promise<HostResponse | null> {
  for (;;) {
    try {
      const response = await connection.request("controller.get", {
        payload: { cwd, controller, key, events: 0 },
        retryUntil: deadline,
      });
      if (!isRetryableAnswer(response)) return response;
    } catch (error) {
      if (!(error instanceof HostUnavailableError)) throw error;
    }
    const left = deadline - Date.now();
    if (left <= 0) return null;
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, left)));
  }
}

/** The resource as last seen (if the host ever answered), then why the wait ended. */
function printWaitEnd(
  io: CliIo,
  command: ControllerCommand,
  detail: ResourceDetailReceipt | null,
  note: string | undefined,
): void {
  if (command.json) {
    // No answer at all before the deadline: nothing to print but the note.
    if (detail) printJson(io, detail);
    else if (note) io.err(note);
    return;
  }
  const lines = detail ? [formatResourceDetail(detail, Date.now(), shortRunId)] : [];
  io.out([...lines, ...(note ? [note] : [])].join("\n"));
}

function notSettled(command: ControllerCommand): string {
  return `Not settled within ${command.timeoutSeconds} s; it goes on in the host`;
}

function notGone(command: ControllerCommand): string {
  return `Not deleted within ${command.timeoutSeconds} s; it goes on in the host`;
}

function readSpec(command: ControllerCommand): JsonValue {
  if (command.spec === null) return null;
  if ("json" in command.spec) return command.spec.json;
  try {
    return parseJsonText(readFileSync(command.spec.file, "utf8"));
  } catch (error) {
    throw new UsageError(
      `Invalid --spec-file: ${(error as Error).message.split("\n")[0].slice(0, 300)}`,
    );
  }
}
