/**
 * Consistency rules of forks (`run.rerun`, transitions/run-fork.ts), checked by
 * `checkInvariants` (tests, doctor) next to the run rules: a fork names a visit its parent made,
 * and its adopted attempts are exact copies of the parent's attempts before that visit, first in
 * the fork's history. Each query returns the rows that break its rule.
 */
export interface ForkCheck {
  code: string;
  sql: string;
  detail: (row: Record<string, unknown>) => string;
}

export const FORK_CHECKS: ForkCheck[] = [
  {
    code: "forkPointMissing",
    sql: "SELECT r.run_id, r.forked_from_run_id AS parent, r.forked_from_node_id AS node " +
      "FROM runs r LEFT JOIN node_attempts a ON a.attempt_id = r.forked_from_attempt_id " +
      "WHERE r.forked_from_run_id IS NOT NULL AND (a.attempt_id IS NULL OR " +
      "a.run_id <> r.forked_from_run_id OR a.node_id <> r.forked_from_node_id)",
    detail: (r) => `fork of ${r.parent} names a visit of "${r.node}" its parent did not make`,
  },
  {
    code: "adoptedAttemptMismatch",
    // Same node, kind, effect, state, output and error as the parent's attempt, which lies
    // before the fork point in the parent.
    sql: "SELECT a.run_id, a.attempt_id FROM node_attempts a JOIN runs r ON r.run_id = a.run_id " +
      "LEFT JOIN node_attempts p ON p.attempt_id = a.adopted_from_attempt_id LEFT JOIN " +
      "node_attempts f ON f.attempt_id = r.forked_from_attempt_id WHERE " +
      "a.adopted_from_attempt_id IS NOT NULL AND (p.attempt_id IS NULL OR " +
      "p.run_id IS NOT r.forked_from_run_id OR p.sequence >= f.sequence OR " +
      "p.node_id <> a.node_id OR p.node_kind <> a.node_kind OR p.effect <> a.effect OR " +
      "p.state <> a.state OR p.output_json IS NOT a.output_json OR " +
      "p.error_code IS NOT a.error_code)",
    detail: (r) => `adopted attempt ${r.attempt_id} is not a copy of its parent's attempt`,
  },
  {
    code: "adoptedAfterOwnAttempt",
    // Adopted history is a prefix: every adopted attempt comes before the fork's own ones.
    sql: "SELECT a.run_id, a.attempt_id FROM node_attempts a WHERE " +
      "a.adopted_from_attempt_id IS NOT NULL AND EXISTS (SELECT 1 FROM node_attempts o WHERE " +
      "o.run_id = a.run_id AND o.adopted_from_attempt_id IS NULL AND o.sequence < a.sequence)",
    detail: (r) => `adopted attempt ${r.attempt_id} follows an attempt of the fork's own`,
  },
];
