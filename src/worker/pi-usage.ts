/**
 * A headless step's usage, read from its Pi child's RPC records: every assistant `message_end`
 * carries Pi's usage for that model call (tokens by kind, cost from the model's price table,
 * provider and model), which this adds to the step's total and reports as the step's whole
 * usage so far. The executor feeds it the records of the step's own turns only.
 *
 * A report is `durable` when it should reach SQLite before the outcome (a crash then loses
 * none of it): after a model call that does not submit the step (tool work may follow for
 * long), and at a turn's end that did not finish the step. A call that submits is not: its
 * usage rides on the outcome's own commit, so a step that submits at once adds no commit.
 */
import { addUsage, EMPTY_USAGE, type StepUsage, usageOfPiMessage } from "../protocol/step-usage.ts";

export type UsageReport = (usage: StepUsage, durable: boolean) => void;

export interface UsageMeter {
  /** Feeds one RPC record of the step (others are ignored). */
  observe(record: { type: string; message?: unknown }): void;
  /** The step's usage so far; null before any model call ended. */
  readonly total: StepUsage | null;
  /** Whether the model call that made tool call `toolCallId` has ended (its usage is counted). */
  counted(toolCallId: string): boolean;
}

export function createUsageMeter(report: UsageReport, submitTool: string): UsageMeter {
  let total: StepUsage | null = null;
  let unsaved = false;
  const calls = new Set<string>();
  return {
    observe(record) {
      if (record.type === "message_end") {
        for (const id of toolCallIds(record.message)) calls.add(id);
        const usage = usageOfPiMessage(record.message);
        if (usage === null) return;
        total = addUsage(total ?? EMPTY_USAGE, usage);
        unsaved = submits(record.message, submitTool);
        report(total, !unsaved);
      } else if (record.type === "turn_end" && unsaved && total !== null) {
        unsaved = false;
        report(total, true);
      }
    },
    get total() {
      return total;
    },
    counted: (toolCallId) => calls.has(toolCallId),
  };
}

function toolCalls(
  message: unknown,
): { type?: unknown; id?: unknown; name?: unknown; arguments?: unknown }[] {
  const content = (message as { content?: unknown } | undefined)?.content;
  return Array.isArray(content) ? content.filter((part) => part?.type === "toolCall") : [];
}

function toolCallIds(message: unknown): string[] {
  if ((message as { role?: unknown } | undefined)?.role !== "assistant") return [];
  return toolCalls(message).flatMap((call) => typeof call.id === "string" ? [call.id] : []);
}

/** True when the assistant message submits the step through `tool`. */
function submits(message: unknown, tool: string): boolean {
  return toolCalls(message).some((call) =>
    call.name === tool &&
    (call.arguments as { action?: unknown } | undefined)?.action === "submit"
  );
}
