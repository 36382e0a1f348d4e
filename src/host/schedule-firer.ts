/**
 * Fires schedules (docs/schedules.md). The host deadline timer asks `deadline` for the earliest
 * next slot and applies the due ones: one transaction each records the slot's pending firing
 * and the schedule's next slot (state/schedules/schedule-firing.ts). Each pending firing is then
 * settled here, one at a time per schedule and in slot order: a slot its overlap policy skips is
 * skipped before anything else; otherwise the workflow is resolved in a supervised child,
 * `cancel-previous` cancels the schedule's active runs, and one transaction starts (or holds, or
 * skips) the slot's run, or records a failed run with the load error. A settling that throws is
 * retried after the later slots queued meanwhile, with a bounded backoff; one whose resolver
 * child died without an answer is resolved again once (a death at every load is a load error).
 *
 * At start every firing a previous host left pending is settled the same way: its run id is
 * derived from schedule and slot, so one that was already enqueued is found settled.
 */
import { crashPoint } from "../base/crash-point.ts";
import type { RunEnvironment } from "../protocol/run-environment.ts";
import type { StateStore } from "../state/store.ts";
import { decodeValue } from "../state/values.ts";
import {
  activeScheduleRuns,
  dueScheduleIds,
  failFiring,
  fireDueSchedule,
  nextScheduleDue,
  pendingFiring,
  pendingFirings,
  skipBeforeResolve,
  startFiring,
} from "../state/schedules/schedule-firing.ts";
import { cancelRun } from "../state/transitions/run-commands.ts";
import { isDatabaseBusy } from "../state/errors.ts";
import { resolvedRunFields } from "./resolved-run.ts";
import type { DeadlineKind } from "./deadline-timer.ts";
import { type HostLog, logError } from "./host-log.ts";
import type { Supervision } from "./host-supervision.ts";

export interface ScheduleFirerOptions {
  store: StateStore;
  log: HostLog;
  /** The host's supervision (created after the firer). */
  supervision: () => Supervision;
  /** A schedule's next slot moved (a pause after load failures): the deadline timer re-arms. */
  deadlinesChanged: () => void;
}

export interface ScheduleFirer {
  /** The deadline kind of schedules' next slots. */
  readonly deadline: DeadlineKind;
  /** Settles every firing left pending (recovery); called once the supervision started. */
  start(): void;
  /**
   * Provider credentials for a schedule's runs, held in memory only (`schedule add`, `apply`
   * and `resume` supply them; a host restart forgets them).
   */
  supplyCredentials(scheduleId: string, credentials: RunEnvironment): void;
  /** Settlements running now (tests and shutdown wait for them). */
  idle(): Promise<void>;
  /** The host stops: no settle is retried after it (an in-process host's store is closed). */
  stop(): void;
}

export function createScheduleFirer(opts: ScheduleFirerOptions): ScheduleFirer {
  const { store, log } = opts;
  const credentials = new Map<string, RunEnvironment>();
  /** Per schedule, the chain of its settlements: one at a time, in slot order. */
  const chains = new Map<string, Promise<void>>();
  const queued = new Set<string>();
  const retries = new Set<NodeJS.Timeout>();
  let stopped = false;

  const settleLater = (scheduleId: string, slotAt: number, failures = 0, crashes = 0) => {
    const key = `${scheduleId}@${slotAt}`;
    if (stopped || queued.has(key)) return;
    queued.add(key);
    const previous = chains.get(scheduleId) ?? Promise.resolve();
    const next = previous.then(async () => {
      const progress = { resolved: false, crashed: false };
      try {
        await settle(scheduleId, slotAt, progress, crashes);
      } catch (error) {
        // A busy database, a throw before the resolution: left pending, the firing would wait
        // for the next host start. Retried with a bounded backoff; given up, the next start
        // settles it. Meanwhile it holds back no later slot (a pending firing is no run ahead).
        // After the resolution only a busy database is retried: another throw (a definition
        // over the column limit) would throw again, each time after a new resolver child.
        const retry = !stopped && failures < SETTLE_RETRIES &&
          (!progress.resolved || isDatabaseBusy(error));
        log("schedule.settleFailed", { error: logError(error), attempt: failures + 1, retry });
        if (retry) {
          // Unref'd: a retry alone never keeps the host up (an enabled schedule does).
          const timer = setTimeout(() => {
            retries.delete(timer);
            settleLater(scheduleId, slotAt, failures + 1, crashes + (progress.crashed ? 1 : 0));
          }, retryDelayMs(failures));
          timer.unref();
          retries.add(timer);
        }
      } finally {
        queued.delete(key);
      }
    });
    chains.set(scheduleId, next);
    void next.then(() => {
      if (chains.get(scheduleId) === next) chains.delete(scheduleId);
    });
  };

  const settle = async (
    scheduleId: string,
    slotAt: number,
    progress: { resolved: boolean; crashed: boolean },
    crashes: number,
  ) => {
    const row = pendingFiring(store, scheduleId, slotAt);
    if (!row) return;
    // A slot its overlap policy skips needs no resolver child: skipped at once, it cannot hold
    // up the slots after it.
    const early = skipBeforeResolve(store, scheduleId, slotAt);
    if (early?.outcome === "skipped") {
      log("schedule.skipped", { schedule: row.name, reason: early.reason });
      return;
    }
    if (early) return;
    const supervision = opts.supervision();
    const resolved = await supervision.resolve({
      workflow: row.workflow,
      input: decodeValue(row.input_json) ?? null,
      cwd: row.project_path,
      env: (decodeValue(row.env_json) ?? {}) as RunEnvironment,
    });
    crashPoint("host.schedule.resolved");
    // Not the workflow's fault: the next host settles the firing.
    if (!resolved.ok && resolved.code === "hostStopping") return;
    // The resolver child died without an answer (killed, crashed): a failure of its own class,
    // not the workflow failing to load, so it neither ends the slot's run failed nor counts
    // toward the schedule's pause; the slot is resolved again, once: a workflow that dies at
    // every load (process.exit at import, a crashing addon, output past the limit) is the same
    // answer every time, and counts as a load failure after that one retry.
    if (!resolved.ok && resolved.code === "workerCrashed" && crashes < CRASH_RETRIES) {
      progress.crashed = true;
      throw new Error("the resolver stopped without an answer");
    }
    progress.resolved = true;
    const problem = !resolved.ok
      ? { code: resolved.code, message: resolved.message }
      : resolved.needsInteractive
      ? {
        code: "needsOriginSession",
        message:
          `"${resolved.workflowName}" has an assistant-message step, which needs an origin Pi session: a schedule starts headless runs`,
      }
      : resolved.needsAgent && row.pi_command === null
      ? {
        code: "piUnavailable",
        message:
          `"${resolved.workflowName}" has agent steps and the schedule records no Pi command to run them (add it again from a shell where 'pi' is found)`,
      }
      : null;
    if (problem !== null || !resolved.ok) {
      // A host stop kills the resolver, which reads as workerCrashed once the retry is spent: no
      // load failure of the workflow. Left pending, the firing is settled by the next host.
      if (stopped) return;
      const failed = failFiring(store, { scheduleId, slotAt, error: problem! });
      if (failed) {
        log("schedule.loadFailed", {
          schedule: row.name,
          runId: failed.runId,
          code: problem!.code,
        });
        if (failed.paused) {
          log("schedule.paused", { schedule: row.name, reason: "loadFailures" });
          opts.deadlinesChanged();
        }
        supervision.wake();
      }
      return;
    }
    if (row.overlap === "cancel-previous") {
      for (const active of activeScheduleRuns(store, scheduleId)) {
        try {
          cancelRun(store, { runId: active.runId, claim: supervision.claimOf(active.runId) });
          await supervision.stopRun(active.runId, "cancelled");
          log("schedule.cancelledPrevious", { schedule: row.name, runId: active.runId });
        } catch (error) {
          log("schedule.cancelFailed", { schedule: row.name, error: logError(error) });
        }
      }
    }
    const outcome = startFiring(store, {
      scheduleId,
      slotAt,
      run: {
        ...resolvedRunFields(resolved, row.project_path),
        definition: resolved.definition,
      },
    });
    if (outcome.outcome === "started" || outcome.outcome === "held") {
      supervision.supplyCredentials(outcome.runId, credentials.get(scheduleId) ?? {});
      log("schedule.started", { schedule: row.name, runId: outcome.runId, ...heldField(outcome) });
      supervision.wake();
    } else if (outcome.outcome === "skipped") {
      log("schedule.skipped", { schedule: row.name, reason: outcome.reason });
    }
  };

  const deadline: DeadlineKind = {
    name: "schedule",
    nextDue: (s) => nextScheduleDue(s),
    applyDue(rt, now, limit) {
      const ids = dueScheduleIds(rt.store, now, limit);
      for (const id of ids) {
        for (const slot of fireDueSchedule(rt.store, id, now)) {
          crashPoint("host.schedule.fired.afterCommit");
          // After this round: the supervision may not have started yet (start-up recovery).
          queueMicrotask(() => settleLater(id, slot));
        }
      }
      return ids.length;
    },
  };

  return {
    deadline,
    start() {
      for (const { scheduleId, slotAt } of pendingFirings(store)) settleLater(scheduleId, slotAt);
    },
    supplyCredentials(scheduleId, supplied) {
      if (Object.keys(supplied).length === 0) credentials.delete(scheduleId);
      else credentials.set(scheduleId, { ...supplied });
    },
    async idle() {
      while (chains.size > 0) await Promise.all([...chains.values()]);
    },
    stop() {
      stopped = true;
      for (const timer of retries) clearTimeout(timer);
      retries.clear();
    },
  };
}

/** Attempts after a failed settle: 0.5 s doubling to 30 s, about 2.5 minutes in all. */
const SETTLE_RETRIES = 10;
/** Of those, how many for a resolver child that died without an answer. */
const CRASH_RETRIES = 1;

function retryDelayMs(failures: number): number {
  return Math.min(30_000, 500 * 2 ** failures);
}

function heldField(outcome: { outcome: string }): Record<string, boolean> {
  return outcome.outcome === "held" ? { held: true } : {};
}
