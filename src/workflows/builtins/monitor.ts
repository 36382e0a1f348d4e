/**
 * `monitor`: watches something on a schedule until a condition holds. observe (an agent checks
 * and says whether `stopWhen` holds or an action is needed) -> act (only when needed) -> a
 * progress notification -> wait. The wait is a protected human decision whose default,
 * "check", is recorded by the host's deadline timer after `everyMinutes`: between checks the
 * run parks with no worker, and a person may answer "check" now or "stop". After `maxChecks`
 * checks without the condition, it gives up. Ends `{status: "done" | "gaveUp" | "stopped"}`.
 */
import { agent, compute, notify } from "../nodes.ts";
import { defineWorkflow } from "../define-workflow.ts";
import { choice, defineHumanChoices, humanDecision, humanDecisionEdge } from "../human-decision.ts";
import type { NodeContext } from "../types.ts";
import { boundedInt, inputRecord, isRecord, optionalText, requiredText } from "./builtin-input.ts";

export interface MonitorInput {
  task: string;
  stopWhen: string;
  everyMinutes: number;
  maxChecks: number;
}

interface Observation {
  summary: string;
  stopConditionMet: boolean;
  action: string | null;
}

const NAME = "monitor";
/** Steps per check at most: observe, decide, act, report, schedule, wait. */
const STEPS_PER_CHECK = 6;
const MAX_CHECKS = 1000;

const WAIT_CHOICES = defineHumanChoices({
  check: choice({ label: "Check now" }),
  stop: choice({ label: "Stop monitoring" }),
});

function readInput(raw: unknown): MonitorInput {
  const input = inputRecord(raw, NAME);
  return {
    task: requiredText(input, "task", NAME),
    stopWhen: optionalText(input, "stopWhen", NAME) ?? "the task is done",
    everyMinutes: boundedInt(input, "everyMinutes", NAME, { min: 1, max: 1440, fallback: 30 }),
    maxChecks: boundedInt(input, "maxChecks", NAME, { min: 1, max: MAX_CHECKS, fallback: 20 }),
  };
}

function checkObservation(output: unknown): Observation {
  if (
    !isRecord(output) || typeof output.summary !== "string" ||
    typeof output.stopConditionMet !== "boolean"
  ) {
    throw new Error(
      'send {"summary": "...", "stopConditionMet": true|false, "action": null or "what to do now"}',
    );
  }
  const action = typeof output.action === "string" && output.action.trim() !== ""
    ? output.action
    : null;
  return { summary: output.summary, stopConditionMet: output.stopConditionMet, action };
}

/** The check number: how many times `observe` has run (this one included). */
function checksDone(ctx: NodeContext<MonitorInput>): number {
  return (ctx.outputs.decide as { check?: number } | undefined)?.check ?? 0;
}

export const monitorWorkflow = defineWorkflow<MonitorInput>({
  name: NAME,
  contractId: "pi-workflows.monitor.v1",
  title: ({ input }) => `Monitor: ${input.task.slice(0, 80)}`,
  input: readInput,
  maxSteps: MAX_CHECKS * STEPS_PER_CHECK + 10,
  startAt: "observe",
  nodes: {
    observe: agent({
      statusDetail: "checking",
      prompt: (ctx) => {
        const previous = ctx.outputs.observe as Observation | undefined;
        return `You are monitoring: ${ctx.input.task}\n\nStop when: ${ctx.input.stopWhen}\n\n` +
          `This is check ${checksDone(ctx) + 1} of at most ${ctx.input.maxChecks}.` +
          (previous ? `\nThe last check found: ${previous.summary}` : "") +
          "\n\nLook at the current state (run read-only commands as you need; change nothing). " +
          "Say whether the stop condition holds now, and whether something must be done before " +
          "the next check (action, else null).";
      },
      expectedOutput: '{"summary": "...", "stopConditionMet": false, "action": null}',
      validate: (output) => checkObservation(output),
    }),
    decide: compute({
      run: (ctx) => {
        const seen = ctx.outputs.observe as Observation;
        const check = ctx.state.visit;
        const route = seen.stopConditionMet ? "done" : seen.action ? "act" : "report";
        return { route, check };
      },
    }),
    act: agent({
      statusDetail: "acting",
      prompt: ({ input, outputs }) =>
        `You are monitoring: ${input.task}\n\nThe last check found: ${outputs.observe.summary}\n\n` +
        `Do this now, and only this: ${outputs.observe.action}`,
      expectedOutput: '{"done": "what you did"}',
      validate: (output) => {
        if (!isRecord(output) || typeof output.done !== "string") {
          throw new Error('send {"done": "what you did"}');
        }
      },
    }),
    report: notify({
      message: (ctx) =>
        `Monitor check ${checksDone(ctx)}/${ctx.input.maxChecks}: ${ctx.outputs.observe.summary}` +
        (ctx.outputs.decide.route === "act" && ctx.outputs.act
          ? `\nDid: ${ctx.outputs.act.done}`
          : ""),
    }),
    schedule: compute({
      run: (ctx) => ({ route: checksDone(ctx) >= ctx.input.maxChecks ? "gaveUp" : "wait" }),
    }),
    wait: humanDecision({
      statusDetail: "waiting for the next check",
      timeoutMs: null,
      choices: WAIT_CHOICES,
      request: (ctx) => ({
        title: `Monitor: next check in ${ctx.input.everyMinutes} min`,
        subject: { task: ctx.input.task, check: checksDone(ctx) },
        presentation: {
          schema: "pi-workflows.decision-presentation.v1",
          summary: `Check ${
            checksDone(ctx)
          } of ${ctx.input.maxChecks}: ${ctx.outputs.observe.summary}`,
          blocks: [{
            kind: "paragraph",
            text: `The next check starts by itself in ${ctx.input.everyMinutes} minutes.`,
          }],
        },
      }),
      onTimeout: ({ input }) => ({
        afterMs: input.everyMinutes * 60_000,
        response: { choice: "check" },
      }),
    }),
    finished: notify({
      kind: "final",
      message: (ctx) =>
        `Monitor: "${ctx.input.stopWhen}" holds after ${
          checksDone(ctx)
        } checks: ${ctx.outputs.observe.summary}`,
    }),
    gaveUp: notify({
      kind: "final",
      message: (ctx) =>
        `Monitor gave up after ${
          checksDone(ctx)
        } checks without "${ctx.input.stopWhen}": ${ctx.outputs.observe.summary}`,
    }),
    done: compute({
      run: (ctx) => ({ status: "done", checks: checksDone(ctx), last: ctx.outputs.observe }),
    }),
    exhausted: compute({
      run: (ctx) => ({ status: "gaveUp", checks: checksDone(ctx), last: ctx.outputs.observe }),
    }),
    stopped: compute({
      run: (ctx) => ({ status: "stopped", checks: checksDone(ctx), last: ctx.outputs.observe }),
    }),
  },
  edges: [
    { from: "observe", to: "decide" },
    {
      from: "decide",
      switch: { on: "$.route", cases: { done: "finished", act: "act", report: "report" } },
    },
    { from: "act", to: "report" },
    { from: "report", to: "schedule" },
    { from: "schedule", switch: { on: "$.route", cases: { wait: "wait", gaveUp: "gaveUp" } } },
    humanDecisionEdge({
      from: "wait",
      choices: WAIT_CHOICES,
      cases: { check: "observe", stop: "stopped" },
    }),
    { from: "finished", to: "done" },
    { from: "gaveUp", to: "exhausted" },
  ],
});
