/**
 * `pi-workflows controller list|get|apply|reconcile|delete|unbind`: requests to the host (started on
 * demand) for the project in `--cwd` (default: the current directory). `--wait` follows the
 * resource by polling `controller.get` until it is quiet (its generation reconciled, nothing due
 * within a second, no child workflow running) or gone (delete), a reconcile failed, or its
 * controller is blocked; the exit code says which.
 */
import { readFileSync } from "node:fs";
import { receiptOf } from "../client/command-receipt.ts";
import type { HostConnection } from "../client/host-connection.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
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
import { clientStateDir } from "../client/socket-path.ts";
import type { PiLaunch } from "../protocol/pi-launch.ts";
import { discoverPi } from "../worker/pi-command.ts";
import type { ControllerCommand } from "./parse-controller.ts";

const POLL_MS = 150;

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
  connection: HostConnection,
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
      else io.out(formatResourceDetail(receipt, Date.now()));
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
  connection: HostConnection,
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
  connection: HostConnection,
  command: ControllerCommand,
  cwd: string,
  controller: string,
  key: string,
  io: CliIo,
): Promise<number> {
  const deadline = Date.now() + command.timeoutSeconds * 1000;
  for (;;) {
    const detail = receiptOf(
      "controller.get",
      await connection.request("controller.get", { payload: { cwd, controller, key, events: 0 } }),
    );
    const done = (code: number, note?: string) => {
      if (command.json) printJson(io, detail);
      else io.out(formatResourceDetail(detail, Date.now()) + (note ? `\n${note}` : ""));
      return code;
    };
    const progress = resourceProgress(detail, Date.now());
    if (progress === "blocked") return done(EXIT.runNeedsAttention);
    if (progress === "failing") return done(EXIT.runUnsuccessful);
    if (progress === "settled") return done(EXIT.ok);
    if (Date.now() >= deadline) {
      return done(
        EXIT.runNeedsAttention,
        `Not settled within ${command.timeoutSeconds} s; it goes on in the host`,
      );
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function waitGone(
  connection: HostConnection,
  command: ControllerCommand,
  cwd: string,
  controller: string,
  key: string,
  io: CliIo,
): Promise<number> {
  const deadline = Date.now() + command.timeoutSeconds * 1000;
  for (;;) {
    const response = await connection.request("controller.get", {
      payload: { cwd, controller, key, events: 0 },
    });
    if (response.outcome === "notFound") {
      if (command.json) printJson(io, { removed: true });
      else io.out(`Deleted ${controller}/${key}`);
      return EXIT.ok;
    }
    const detail = receiptOf("controller.get", response);
    // A blocked controller runs no finalizer until its source is right: no use waiting.
    const blocked = resourceProgress(detail, Date.now()) === "blocked";
    if (Date.now() >= deadline || detail.queue?.consecutiveErrors || blocked) {
      if (command.json) printJson(io, detail);
      else io.out(formatResourceDetail(detail, Date.now()));
      return detail.queue?.consecutiveErrors ? EXIT.runUnsuccessful : EXIT.runNeedsAttention;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

function readSpec(command: ControllerCommand): JsonValue {
  if (command.spec === null) return null;
  if ("json" in command.spec) return command.spec.json;
  try {
    return JSON.parse(readFileSync(command.spec.file, "utf8")) as JsonValue;
  } catch (error) {
    throw new UsageError(
      `Invalid --spec-file: ${(error as Error).message.split("\n")[0].slice(0, 300)}`,
    );
  }
}
