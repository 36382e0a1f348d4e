/**
 * What a waiting run asks, for people (`pi-workflows status`): the decision's title, subject and
 * presentation blocks, its choices and how to answer, the deadline and the default; or a
 * checkpoint's request and answer shape.
 */
import type { AnswerSchema } from "../protocol/answer-schema.ts";
import { canonicalJson } from "../protocol/canonical-json.ts";
import type { PresentationBlock, Waiting } from "../protocol/decision-request.ts";
import type { RunInteraction } from "../protocol/run-operations.ts";
import { type CliStyle, PLAIN_STYLE } from "./cli-style.ts";
import { shortRunId } from "./run-ids.ts";
import { when } from "./time-text.ts";

const INDENT = "  ";

export function formatWaiting(
  runId: string,
  waiting: Waiting,
  now = Date.now(),
  style: CliStyle = PLAIN_STYLE,
): string {
  const lines: string[] = [];
  const kind = waiting.kind === "humanDecision" ? "human decision" : "checkpoint";
  lines.push(`waiting: ${waiting.nodeId} (${kind}) since ${when(waiting.since, now)}`);
  if (waiting.kind === "humanDecision" && waiting.decision) {
    const d = waiting.decision;
    lines.push(`${INDENT}${d.title}`);
    const subject = typeof d.subject === "string" ? d.subject : value(d.subject);
    if (subject !== "" && subject !== "null") lines.push(`${INDENT}subject: ${subject}`);
    if (d.audience) lines.push(`${INDENT}audience: ${d.audience}`);
    if (d.presentation.summary) lines.push(`${INDENT}${d.presentation.summary}`);
    lines.push(...blocks(d.presentation.blocks, INDENT.repeat(2)));
    lines.push(`${INDENT}choices:`);
    const width = Math.max(...Object.keys(d.choices).map((name) => name.length));
    for (const [name, choice] of Object.entries(d.choices)) {
      const input = choice.input
        ? `  (needs --input ${choice.input.name}=<text>: ${choice.input.prompt})`
        : "";
      lines.push(`${INDENT.repeat(2)}${name.padEnd(width)}  ${choice.label}${input}`);
    }
  } else {
    lines.push(`${INDENT}request: ${value(waiting.request ?? null)}`);
    if (waiting.answerSchema) {
      lines.push(`${INDENT}answer shape: ${schemaSummary(waiting.answerSchema)}`);
    }
  }
  lines.push(
    `${INDENT}deadline: ${waiting.deadlineAt === null ? "none" : when(waiting.deadlineAt, now)}`,
  );
  if (waiting.default) {
    const answer = waiting.default.answer;
    lines.push(
      `${INDENT}default: ${answer.choice}${answer.text ? ` (${answer.text})` : ""} at ${
        when(waiting.default.at, now)
      } unless answered first`,
    );
  }
  // One exact command a choice: a hint naming only the first hid the others' inputs.
  howToAnswer(runId, waiting).forEach((command, i) => {
    lines.push(`${INDENT}${i === 0 ? "answer:" : "    or:"} ${command}`);
  });
  // A terminal that is not UTF-8 gets ASCII for the bullets, rules and dashes.
  return style.text(lines.join("\n"));
}

/** The step an interactive run waits on in its Pi session (ids and times; no prompt). */
export function formatInteraction(interaction: RunInteraction, now = Date.now()): string {
  const lines = [
    `waiting: ${interaction.nodeId} (${interaction.nodeKind}) in its Pi session since ${
      when(interaction.since, now)
    }`,
    `${INDENT}${interaction.presented ? "shown in the session" : "not shown yet"}; ` +
    `${interaction.submissions} submission${interaction.submissions === 1 ? "" : "s"}` +
    `${interaction.validating ? " (one being validated)" : ""}; ` +
    `reminders ${interaction.reminders} of 2`,
  ];
  if (interaction.deadlineAt !== null) {
    lines.push(`${INDENT}deadline: ${when(interaction.deadlineAt, now)}`);
  }
  lines.push(
    `${INDENT}the model in that session answers it with the workflow tool's submit; ` +
      "open the session to continue",
  );
  return lines.join("\n");
}

function howToAnswer(runId: string, waiting: Waiting): string[] {
  const base = `pi-workflows answer ${shortRunId(runId)} ${waiting.nodeId}`;
  if (waiting.kind === "checkpoint") return [`${base} '<json or text>'`];
  const choices = Object.entries(waiting.decision?.choices ?? {});
  if (choices.length === 0) return [`${base} <choice>`];
  return choices.map(([name, choice]) =>
    choice.input
      ? `${base} --choice ${name} --input ${choice.input.name}='<text>'`
      : `${base} ${name}`
  );
}

function blocks(list: readonly PresentationBlock[], indent: string): string[] {
  const out: string[] = [];
  for (const block of list) {
    switch (block.kind) {
      case "paragraph":
        out.push(...block.text.split("\n").map((line) => indent + line));
        break;
      case "section":
        out.push(`${indent}${block.title}`);
        out.push(...blocks(block.blocks ?? [], indent + INDENT));
        break;
      case "bullets":
        out.push(...block.items.map((item) => `${indent}• ${item}`));
        break;
      case "fields":
        for (const field of block.items) out.push(`${indent}${field.label}: ${field.value}`);
        break;
      case "preformatted":
        out.push(...block.text.split("\n").map((line) => `${indent}│ ${line}`));
        break;
    }
  }
  return out;
}

function schemaSummary(schema: AnswerSchema): string {
  if (schema.properties) {
    const required = new Set(schema.required ?? []);
    const fields = Object.entries(schema.properties).map(([name, field]) =>
      `${name}${required.has(name) ? "" : "?"}: ${typeName(field)}`
    );
    return `{${fields.join(", ")}}`;
  }
  return typeName(schema);
}

function typeName(schema: AnswerSchema): string {
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (schema.type === undefined) return "any";
  return Array.isArray(schema.type) ? schema.type.join(" | ") : schema.type;
}

function value(v: unknown): string {
  const text = canonicalJson(v);
  return text.length > 2000 ? `${text.slice(0, 2000)}… (truncated)` : text;
}
