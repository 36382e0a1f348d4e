/**
 * A progress update as people read it: `copying 3/10 files 30% · 2.1/s · ETA 3s`, the rate and
 * ETA derived from the samples seen so far (the first and latest of one attempt's key). A TTY
 * line may add a bar.
 */
import type { ProgressFields } from "../protocol/progress-fields.ts";
import { estimateProgress, type ProgressSample } from "../base/progress.ts";
import type { CliStyle } from "./cli-style.ts";
import { duration } from "./time-text.ts";

const BAR_WIDTH = 12;

/** The samples of one progress key of one attempt, oldest first (only the ends matter). */
export class ProgressTrack {
  #first: ProgressSample | null = null;
  #last: ProgressSample | null = null;
  #fields: ProgressFields | null = null;

  add(at: number, fields: ProgressFields): void {
    const sample = {
      at,
      completed: fields.completed,
      ...(fields.total === undefined ? {} : { total: fields.total }),
    };
    // A count that went back (a restart of the work) starts a new estimate.
    if (this.#first === null || (this.#last && fields.completed < this.#last.completed)) {
      this.#first = sample;
    }
    this.#last = sample;
    this.#fields = fields;
  }

  get fields(): ProgressFields | null {
    return this.#fields;
  }

  /** Whether the work is known to be done (completed reached total). */
  get done(): boolean {
    const f = this.#fields;
    return f !== null && f.total !== undefined && f.completed >= f.total;
  }

  text(style: CliStyle, options: { bar?: boolean; now?: number } = {}): string {
    const f = this.#fields;
    if (!f || !this.#first || !this.#last) return "";
    const estimate = estimateProgress([this.#first, this.#last]);
    const sep = ` ${style.glyph("separator")} `;
    const unit = f.unit ? ` ${f.unit}` : "";
    let head = f.total !== undefined
      ? `${number(f.completed)}/${number(f.total)}${unit}`
      : `${number(f.completed)}${unit}`;
    if (estimate.fraction !== null) head += ` ${Math.floor(estimate.fraction * 100)}%`;
    if (f.label) head = `${f.label}: ${head}`;
    if (options.bar && estimate.fraction !== null) {
      head = `${bar(estimate.fraction, style)} ${head}`;
    }
    const parts = [head];
    if (estimate.ratePerSecond !== null) parts.push(`${rate(estimate.ratePerSecond)}/s`);
    if (estimate.etaMs !== null && !this.done) {
      // The ETA counts down between updates, from the latest one.
      const since = options.now !== undefined ? Math.max(0, options.now - this.#last.at) : 0;
      parts.push(`ETA ${duration(Math.max(0, estimate.etaMs - since))}`);
    }
    return parts.join(sep);
  }
}

function bar(fraction: number, style: CliStyle): string {
  const filled = Math.round(fraction * BAR_WIDTH);
  const [full, empty] = style.terminal.unicode ? ["█", "░"] : ["#", "-"];
  return `[${full.repeat(filled)}${empty.repeat(BAR_WIDTH - filled)}]`;
}

function number(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

function rate(perSecond: number): string {
  return perSecond >= 10 ? String(Math.round(perSecond)) : perSecond.toFixed(1);
}
