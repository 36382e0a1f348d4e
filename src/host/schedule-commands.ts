/**
 * `schedule.add`, `schedule.apply`, `schedule.list`, `schedule.show`, `schedule.pause`,
 * `schedule.resume` and `schedule.remove` (docs/schedules.md). Add and apply first have a
 * supervised resolver child load the workflow (the host runs no workflow code), so a schedule
 * whose workflow does not load, or cannot run headless, is refused before it exists. Each change
 * commits with its receipt in one transaction; the deadline timer then re-reads the next slot.
 */
import { realpathSync } from "node:fs";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { JSON_TOO_DEEP, withinJsonDepth } from "../protocol/json-depth.ts";
import { splitCredentials } from "../base/credential-names.ts";
import { type HostRequest, type OperationRequest, requestFor } from "../protocol/host-request.ts";
import type { HostOperation, OperationReceipt } from "../protocol/host-operations.ts";
import { failureResponse, type HostResponse, receiptResponse } from "../protocol/host-response.ts";
import type { PiLaunch } from "../protocol/pi-launch.ts";
import { baseRunEnvironment, type RunEnvironment } from "../protocol/run-environment.ts";
import {
  ScheduleDeclarationSchema,
  type ScheduleTimingFields,
} from "../protocol/schedule-operations.ts";
import {
  type CatchUpPolicy,
  localTimeZone,
  type OverlapPolicy,
  parseEvery,
} from "../base/schedule-timing.ts";
import type { CommandReceiptInput } from "../state/host-commands.ts";
import { latestFirings } from "../state/schedules/schedule-queries.ts";
import {
  findSchedule,
  listScheduleRows,
  pauseSchedule,
  removeSchedule,
  resumeSchedule,
  scheduleNotFound,
  scheduleView,
} from "../state/schedules/schedule-records.ts";
import { upsertSchedule } from "../state/schedules/schedule-upsert.ts";
import { resolvedRunFields } from "./resolved-run.ts";
import type { HostRuntime } from "./host-runtime.ts";
import * as v from "valibot";

const DEFAULT_FIRINGS = 10;

function reject(rt: HostRuntime, request: HostRequest, code: string, message: string) {
  return failureResponse({
    requestId: request.requestId,
    hostEpoch: rt.epoch,
    outcome: "rejected",
    code,
    message,
  });
}

function answer<Op extends HostOperation>(
  rt: HostRuntime,
  request: { operation: Op; requestId: string },
  receipt: OperationReceipt<Op>,
): HostResponse {
  return receiptResponse(request, rt.epoch, receipt);
}

interface ScheduleRequest {
  name: string | null;
  workflow: string;
  cwd: string;
  input: JsonValue;
  env: RunEnvironment | undefined;
  credentials: RunEnvironment | undefined;
  pi: PiLaunch | undefined;
  replace: boolean;
  /** The declared timing, from the command or the workflow file; null: the file declares none. */
  timing: ScheduleTimingFields | null;
  defaultTimeZone: string | undefined;
  origin: "command" | "file";
}

export function addScheduleCommand(
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
): Promise<HostResponse> {
  const typed = requestFor(request, "schedule.add");
  const p = typed.payload;
  return upsertFromRequest(rt, typed, receipt, {
    name: p.name,
    workflow: p.workflow,
    cwd: p.cwd,
    input: (p.input ?? null) as JsonValue,
    env: p.env,
    credentials: p.credentials,
    pi: p.pi,
    replace: p.replace ?? false,
    timing: p,
    defaultTimeZone: undefined,
    origin: "command",
  });
}

export function applyScheduleCommand(
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
): Promise<HostResponse> {
  const typed = requestFor(request, "schedule.apply");
  const p = typed.payload;
  return upsertFromRequest(rt, typed, receipt, {
    name: null,
    workflow: p.workflow,
    cwd: p.cwd,
    input: null,
    env: p.env,
    credentials: p.credentials,
    pi: p.pi,
    replace: true,
    timing: null,
    defaultTimeZone: p.defaultTimeZone,
    origin: "file",
  });
}

async function upsertFromRequest(
  rt: HostRuntime,
  request: OperationRequest<"schedule.add" | "schedule.apply">,
  receipt: CommandReceiptInput,
  s: ScheduleRequest,
): Promise<HostResponse> {
  let projectPath: string;
  try {
    projectPath = realpathSync(s.cwd);
  } catch {
    return reject(
      rt,
      request,
      "invalidCwd",
      "Cannot schedule: the working directory does not exist",
    );
  }
  const split = splitCredentials(s.env ?? baseRunEnvironment(process.env));
  const credentials = { ...s.credentials, ...split.credentials };
  // A file's declaration is read from its definition, so the file is loaded first (with the
  // input it declares, which is only known after): a first resolve reads the declaration.
  let input = s.input;
  let timing = s.timing;
  let name = s.name;
  if (s.origin === "file") {
    const declared = await readDeclaration(rt, s.workflow, projectPath, split.env);
    if (!declared.ok) return reject(rt, request, declared.code, declared.message);
    input = declared.declaration.input ?? null;
    timing = declared.declaration;
    name = declared.declaration.name ?? declared.workflowName;
  }
  const resolved = await rt.supervision.resolve({
    workflow: s.workflow,
    input,
    cwd: projectPath,
    env: split.env,
  });
  if (!resolved.ok) return reject(rt, request, resolved.code, resolved.message);
  if (resolved.needsInteractive) {
    return reject(
      rt,
      request,
      "needsOriginSession",
      `Cannot schedule "${resolved.workflowName}": it has an assistant-message step, which needs an origin Pi session; a schedule starts headless runs`,
    );
  }
  if (resolved.needsAgent && !s.pi) {
    return reject(
      rt,
      request,
      "piUnavailable",
      `Cannot schedule "${resolved.workflowName}": it has agent steps and no Pi command was found to run them`,
    );
  }
  const everyMs = timing!.every !== undefined ? parseEvery(timing!.every) : null;
  const fields = resolvedRunFields(resolved, projectPath);
  const result = upsertSchedule(rt.store, {
    name: name!,
    workflow: s.workflow,
    workflowName: fields.workflowName,
    workflowRef: fields.workflowRef,
    projectPath,
    timing: everyMs?.ok ? { kind: "every", everyMs: everyMs.ms } : {
      kind: "cron",
      cron: timing!.cron!.trim().replace(/\s+/g, " "),
      timeZone: timing!.timeZone ?? s.defaultTimeZone ?? localTimeZone(),
    },
    overlap: (timing!.overlap ?? "skip") as OverlapPolicy,
    catchUp: (timing!.catchUp ?? "none") as CatchUpPolicy,
    // The raw input: every firing normalizes it again with the workflow's own normalizer (a
    // normalized value need not normalize to itself).
    input,
    inputHash: fields.inputHash,
    workflowSource: fields.workflowSource,
    definitionDigest: fields.definitionDigest,
    env: split.env,
    credentialNames: Object.keys(credentials),
    runSecretNames: Object.keys(split.credentials),
    pi: s.pi ?? null,
    origin: s.origin,
  }, {
    replace: s.replace,
    receipt,
  });
  rt.schedules.supplyCredentials(result.scheduleId, credentials);
  rt.deadlines.changed();
  rt.log("schedule.saved", { schedule: result.schedule.name, created: result.created });
  return answer(rt, request, {
    schedule: result.schedule,
    created: result.created,
    changed: result.changed,
  });
}

type Declared =
  | { ok: true; declaration: v.InferOutput<typeof ScheduleDeclarationSchema>; workflowName: string }
  | { ok: false; code: string; message: string };

async function readDeclaration(
  rt: HostRuntime,
  workflow: string,
  projectPath: string,
  env: RunEnvironment,
): Promise<Declared> {
  // The input is not known yet: the file's own `input` normalizer sees null here and the
  // declared input at the real resolve; a normalizer that refuses null still declares.
  const probe = await rt.supervision.resolve({ workflow, input: null, cwd: projectPath, env });
  if (!probe.ok && probe.code !== "invalidInput") return probe;
  const definition = probe.ok ? probe.definition : null;
  const raw = (definition as { schedule?: unknown } | null)?.schedule;
  if (raw === undefined) {
    return {
      ok: false,
      code: "noScheduleDeclared",
      message: probe.ok
        ? `"${probe.workflowName}" declares no schedule: add \`schedule\` to its defineWorkflow, or use 'schedule add'`
        : "The workflow did not load with a null input, so its schedule cannot be read",
    };
  }
  const parsed = v.safeParse(ScheduleDeclarationSchema, raw);
  if (!parsed.success) {
    return {
      ok: false,
      code: "invalidSchedule",
      message: `Invalid schedule in the workflow file: ${parsed.issues[0].message}`,
    };
  }
  // Its input becomes every run's: held to the bound of a client's value (json-depth.ts) here,
  // not where the file loads, so the workflow itself still loads and starts.
  if (!withinJsonDepth(parsed.output.input)) {
    return {
      ok: false,
      code: "invalidSchedule",
      message: `Invalid schedule in the workflow file: schedule.input: ${JSON_TOO_DEEP}`,
    };
  }
  return { ok: true, declaration: parsed.output, workflowName: probe.ok ? probe.workflowName : "" };
}

export function scheduleListQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  return answer(rt, requestFor(request, "schedule.list"), {
    schedules: listScheduleRows(rt.store).map(scheduleView),
  });
}

export function scheduleShowQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  const typed = requestFor(request, "schedule.show");
  const p = typed.payload;
  const row = findSchedule(rt.store, p.name);
  if (!row) throw scheduleNotFound(p.name);
  return answer(rt, typed, {
    schedule: scheduleView(row),
    firings: latestFirings(rt.store, row.schedule_id, p.firings ?? DEFAULT_FIRINGS),
  });
}

export function pauseScheduleCommand(
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
): HostResponse {
  const typed = requestFor(request, "schedule.pause");
  const p = typed.payload;
  const schedule = pauseSchedule(rt.store, p.name, receipt);
  rt.deadlines.changed();
  rt.log("schedule.paused", { schedule: p.name, reason: "command" });
  return answer(rt, typed, { schedule });
}

export function resumeScheduleCommand(
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
): HostResponse {
  const typed = requestFor(request, "schedule.resume");
  const p = typed.payload;
  const schedule = resumeSchedule(rt.store, p.name, receipt);
  const row = findSchedule(rt.store, p.name);
  // Keys held from the add stay unless this resume brings some (a host restart forgot them).
  if (row && p.credentials && Object.keys(p.credentials).length > 0) {
    rt.schedules.supplyCredentials(row.schedule_id, p.credentials);
  }
  rt.deadlines.changed();
  rt.log("schedule.resumed", { schedule: p.name });
  return answer(rt, typed, { schedule });
}

export function removeScheduleCommand(
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
): HostResponse {
  const typed = requestFor(request, "schedule.remove");
  const p = typed.payload;
  const row = findSchedule(rt.store, p.name);
  removeSchedule(rt.store, p.name, receipt);
  if (row) rt.schedules.supplyCredentials(row.schedule_id, {});
  rt.deadlines.changed();
  // A held run it released may start now.
  rt.supervision.wake();
  rt.log("schedule.removed", { schedule: p.name });
  return answer(rt, typed, { name: p.name, removed: true });
}
