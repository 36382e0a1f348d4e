/**
 * The committed facts of one run (`RunFacts`) as JSON text, produced piece by piece: a head with
 * the run's fields, then one piece per attempt (read from SQLite a page of rows at a time), then
 * the end. Stored outputs are spliced in as the canonical JSON text they were stored as, never
 * parsed, so the host streams a run of any length in bounded memory. `readRunFacts` is this text,
 * parsed: one place decides what the facts are.
 */
import type { RunFacts } from "../protocol/run-facts.ts";
import { NotFoundError } from "./errors.ts";
import { budgetOf } from "./run-spend.ts";
import { type StateStore } from "./store.ts";
import { queryAllArgs, queryOneArgs } from "./statements.ts";

/** Attempt rows read per query while streaming. */
const PAGE_ROWS = 256;

interface AttemptRow {
  attempt_id: string;
  node_id: string;
  sequence: number;
  node_kind: string;
  effect: string;
  state: string;
  output_json: string | null;
  error_code: string | null;
  error_message: string | null;
  started_at: number;
  finished_at: number | null;
  deadline_at: number | null;
  usage_json: string | null;
}

const q = (text: string) => JSON.stringify(text);

export function* runFactsText(store: StateStore, runId: string): Generator<string, void, void> {
  const run = queryOneArgs<{
    workflow_name: string;
    project_path: string;
    input_json: string;
    approved_retry_attempt_id: string | null;
    budget_cost: number | null;
    budget_tokens: number | null;
    pooled: number;
  }>(
    store,
    "SELECT workflow_name, project_path, input_json, approved_retry_attempt_id, budget_cost, " +
      "budget_tokens, budget_pool_id IS NOT NULL AS pooled FROM runs WHERE run_id = ?1",
    runId,
  );
  if (!run) throw new NotFoundError("run", runId);
  let head = `{"runId":${q(runId)},"workflowName":${q(run.workflow_name)},"projectPath":${
    q(run.project_path)
  },"input":${run.input_json}`;
  if (run.approved_retry_attempt_id !== null) {
    head += `,"approvedRetry":{"attemptId":${q(run.approved_retry_attempt_id)}}`;
  }
  if (run.budget_cost !== null || run.budget_tokens !== null) {
    head += `,"budget":${JSON.stringify(budgetOf(run.budget_cost, run.budget_tokens))}`;
  }
  if (run.pooled) head += `,"budgetPool":true`;
  yield `${head},"attempts":[`;
  let after = 0;
  let separator = "";
  for (;;) {
    const rows = queryAllArgs<AttemptRow>(
      store,
      "SELECT attempt_id, node_id, sequence, node_kind, effect, state, output_json, error_code, " +
        "error_message, started_at, finished_at, deadline_at, usage_json FROM node_attempts " +
        "WHERE run_id = ?1 AND sequence > ?2 ORDER BY sequence LIMIT ?3",
      runId,
      after,
      PAGE_ROWS,
    );
    for (const row of rows) {
      yield separator + attemptText(row);
      separator = ",";
    }
    if (rows.length < PAGE_ROWS) break;
    after = rows[rows.length - 1].sequence;
  }
  yield "]}";
}

/** One `AttemptFact` as JSON text; an answered checkpoint is already `ok` with the answer. */
function attemptText(a: AttemptRow): string {
  let text = `{"attemptId":${q(a.attempt_id)},"nodeId":${q(a.node_id)},"sequence":${a.sequence},` +
    `"nodeKind":${q(a.node_kind)},"effect":${q(a.effect)},"state":${q(a.state)}`;
  if (a.output_json !== null) text += `,"output":${a.output_json}`;
  if (a.error_code !== null) {
    text += `,"error":{"code":${q(a.error_code)},"message":${q(a.error_message ?? "")}}`;
  }
  text += `,"startedAt":${a.started_at}`;
  if (a.finished_at !== null) text += `,"finishedAt":${a.finished_at}`;
  text += `,"deadlineAt":${a.deadline_at === null ? "null" : a.deadline_at}`;
  return a.usage_json === null ? `${text}}` : `${text},"usage":${a.usage_json}}`;
}

/** The committed facts the engine routes from: this run's input and its attempts in order. */
export function readRunFacts(store: StateStore, runId: string): RunFacts {
  return JSON.parse([...runFactsText(store, runId)].join("")) as RunFacts;
}
