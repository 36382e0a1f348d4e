/**
 * Consistency rules of the controller records, checked by `checkInvariants` (tests, doctor) next
 * to the run rules. Each query returns the rows that break its rule.
 */
export interface ControllerCheck {
  code: string;
  sql: string;
  detail: (row: Record<string, unknown>) => string;
}

const LEASE = "l.resource = 'reconcile:' || r.uid";

export const CONTROLLER_CHECKS: ControllerCheck[] = [
  {
    code: "reconcileQueueMismatch",
    sql: "SELECT r.uid, r.removed_at IS NOT NULL AS removed FROM controller_resources r " +
      "LEFT JOIN controller_queue q ON q.uid = r.uid WHERE (r.removed_at IS NULL) <> " +
      "(q.uid IS NOT NULL)",
    detail: (r) =>
      r.removed
        ? `removed resource ${r.uid} still has a reconcile queue row`
        : `resource ${r.uid} has no reconcile queue row`,
  },
  {
    code: "reconcileClaimMismatch",
    // A claim is remembered on the queue row exactly while its lease holds a token.
    sql: "SELECT r.uid, q.claim_version, l.token_hash IS NOT NULL AS held FROM " +
      `controller_resources r LEFT JOIN controller_queue q ON q.uid = r.uid LEFT JOIN leases l ON ${LEASE} ` +
      "WHERE (q.claim_version IS NOT NULL) <> (l.token_hash IS NOT NULL)",
    detail: (r) =>
      r.held
        ? `resource ${r.uid} has a reconcile lease but its queue row remembers no claim`
        : `resource ${r.uid} remembers a reconcile claim that no lease holds`,
  },
  {
    code: "removedResourceIncomplete",
    sql: "SELECT uid FROM controller_resources WHERE removed_at IS NOT NULL AND " +
      "finalizers_json <> '[]'",
    detail: (r) => `removed resource ${r.uid} still lists finalizers`,
  },
  {
    code: "applyingEffectWithoutReconcile",
    // An effect is applying only under the reconcile that reserved it.
    sql: "SELECT e.resource_uid AS uid, e.effect_id FROM effects e LEFT JOIN controller_queue q " +
      "ON q.uid = e.resource_uid WHERE e.resource_uid IS NOT NULL AND e.state = 'applying' " +
      "AND q.claim_version IS NULL",
    detail: (r) => `effect ${r.effect_id} of resource ${r.uid} is applying with no reconcile`,
  },
  {
    code: "unsettledEffectOnRemovedResource",
    sql: "SELECT e.resource_uid AS uid, e.effect_id FROM effects e JOIN controller_resources r " +
      "ON r.uid = e.resource_uid WHERE r.removed_at IS NOT NULL AND e.state IN " +
      "('pending', 'applying')",
    detail: (r) => `effect ${r.effect_id} of removed resource ${r.uid} is still pending`,
  },
  {
    code: "resourceVersionRegressed",
    sql: "SELECT r.uid, r.resource_version, MAX(e.resource_version) AS m FROM " +
      "controller_resources r JOIN controller_events e ON e.uid = r.uid GROUP BY r.uid " +
      "HAVING MAX(e.resource_version) > r.resource_version OR r.generation > r.resource_version",
    detail: (r) => `resource ${r.uid} is at version ${r.resource_version}, events reach ${r.m}`,
  },
  {
    code: "sessionBindingMismatch",
    // A child started under a binding runs interactively in exactly that binding's session, and
    // the binding belongs to the child's own controller. (Details name ids, never sessions.)
    sql: "SELECT w.request_id, w.run_id FROM controller_workflow_requests w JOIN " +
      "controller_session_bindings b ON b.binding_id = w.binding_id JOIN controller_resources r " +
      "ON r.uid = w.uid LEFT JOIN run_bindings rb ON rb.run_id = w.run_id WHERE " +
      "b.controller_id <> r.controller_id OR rb.execution_mode IS NOT 'interactive' OR " +
      "rb.origin_session_id IS NOT b.session_id",
    detail: (r) =>
      `child run ${r.run_id} of request ${r.request_id} does not run in its binding's session`,
  },
  {
    code: "interactiveChildHeadless",
    sql: "SELECT w.request_id, w.run_id FROM controller_workflow_requests w JOIN run_bindings rb " +
      "ON rb.run_id = w.run_id WHERE w.interactive = 1 AND (w.binding_id IS NULL OR " +
      "rb.execution_mode <> 'interactive')",
    detail: (r) => `interactive request ${r.request_id} has run ${r.run_id} without its binding`,
  },
];
