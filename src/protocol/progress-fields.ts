/**
 * The numbers of a `progress` update (`pi-workflows.progress.v1`: completed, total?, unit?,
 * label?) as the `node.update` event carries them, so a follower (`start --wait`) can show
 * numbers, rate and ETA from the event stream alone. Only these four bounded fields travel:
 * never the rest of the update's data.
 */
import type { JsonValue } from "./canonical-json.ts";
import type { ProgressData } from "../base/progress.ts";

/** The contract's fields without its schema tag. */
export type ProgressFields = Omit<ProgressData, "schema">;

const MAX_TEXT = 200;

/** The progress fields of an update's data, or null when it is not a usable progress value. */
export function progressFields(data: JsonValue | undefined): ProgressFields | null {
  if (typeof data !== "object" || data === null || Array.isArray(data)) return null;
  const { completed, total, unit, label } = data;
  if (!isCount(completed)) return null;
  const fields: ProgressFields = { completed };
  if (isCount(total)) fields.total = total;
  if (typeof unit === "string" && unit !== "") fields.unit = unit.slice(0, MAX_TEXT);
  if (typeof label === "string" && label !== "") fields.label = label.slice(0, MAX_TEXT);
  return fields;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}
