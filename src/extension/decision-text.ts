/**
 * The text Pi shows for a run waiting on a person: a protected human decision (title, summary,
 * presentation blocks, choices, how to answer with `/workflow answer`) or an ordinary checkpoint
 * (its request and answer shape; the model may answer it with the tool). Pure.
 */
import type { PresentationBlock, Waiting } from "../protocol/decision-request.ts";

export type { Waiting };

type Block = PresentationBlock;

export function decisionText(runId: string, waiting: Waiting): string {
  if (waiting.kind === "humanDecision" && waiting.decision) {
    const d = waiting.decision;
    const lines = [`Workflow decision: ${d.title}`];
    if (d.presentation?.summary) lines.push(d.presentation.summary);
    for (const block of d.presentation?.blocks ?? []) lines.push(...blockLines(block, ""));
    lines.push("", "Choices:");
    for (const [key, choice] of Object.entries(d.choices)) {
      const input = choice.input ? ` (add text: ${choice.input.prompt})` : "";
      lines.push(`- ${key}: ${choice.label}${input}`);
    }
    if (waiting.default) {
      lines.push(
        `Without an answer by ${new Date(waiting.default.at).toISOString()} the workflow ` +
          `takes "${waiting.default.answer.choice}".`,
      );
    }
    lines.push(
      "",
      `A person answers this: /workflow answer ${runId} <choice> [text], e.g. ` +
        `/workflow answer ${Object.keys(d.choices)[0] ?? "<choice>"}`,
    );
    return lines.join("\n");
  }
  const lines = [`Workflow checkpoint: step ${waiting.nodeId} waits for an answer.`];
  if (waiting.request !== undefined) lines.push(`Request: ${JSON.stringify(waiting.request)}`);
  if (waiting.answerSchema !== undefined) {
    lines.push(`Answer shape: ${JSON.stringify(waiting.answerSchema)}`);
  }
  lines.push(
    `Answer with /workflow answer ${runId} <json|text>, or ask the model to use the workflow ` +
      'tool: {"action":"answer","runId":' + JSON.stringify(runId) + ',"input":<answer>}',
  );
  return lines.join("\n");
}

function blockLines(block: Block, indent: string): string[] {
  switch (block.kind) {
    case "paragraph":
    case "preformatted":
      return block.text.split("\n").map((line) => `${indent}${line}`);
    case "section":
      return [
        `${indent}${block.title}`,
        ...(block.blocks ?? []).flatMap((b) => blockLines(b, `${indent}  `)),
      ];
    case "bullets":
      return block.items.map((item) => `${indent}- ${item}`);
    case "fields":
      return block.items.map((item) => `${indent}${item.label}: ${item.value}`);
  }
}
