-- pi-workflows-state, schema version 1.
--
-- Every durable fact of the workflow host. Only the host process writes this database; workers,
-- the CLI, the extension and viewers never do (viewers open it read-only).
--
-- Table families, their writers and the functions that own their transitions:
--   identity     meta                               openStateStore (once, at creation)
--   host         host_claim                         host-claim.ts (acquire/renew/releaseHostClaim)
--   lifecycle    runs, run_queue, leases, run_bindings
--                                                   transitions/*.ts (one function per transition)
--   definitions  workflow_definitions               transitions/run-enqueue.ts (once per digest)
--   history      events, viewer_deltas              journal.ts, appended by every transition
--   execution    node_attempts, node_updates         transitions/node-attempts.ts
--   decisions    human_decisions, human_decision_resolutions
--                                                   transitions/run-park.ts (waitRun),
--                                                   decisions.ts (answers, defaults, wait
--                                                   timeouts), run-commands.ts, run-end.ts
--   effects      effects, effect_attempts            transitions/effects.ts, common.ts (stops),
--                                                   controllers/reconcile-effects.ts
--   controllers  controllers, controller_resources, controller_queue, controller_workers,
--                controller_workflow_requests, controller_events,
--                controller_session_bindings (controller_prunes: retention only)
--                                                   controllers/*.ts (one function per transition)
--   pi messages  notifications, turn_intents         transitions/notifications.ts, turn-intents.ts
--                                                   (also called by node, terminal and cancel
--                                                   transitions)
--   commands     host_commands                       host-commands.ts, inside each command's
--                                                   transition transaction (worker-message
--                                                   receipts: in their events, journal.ts)
--   interaction  interactive_requests, interactive_submissions
--                                                   transitions/interactions.ts,
--                                                   interaction-verdicts.ts; cancel and terminal
--                                                   transitions close pending ones
--   schedules    schedules, schedule_firings         schedules/schedule-records.ts (add, apply,
--                                                   pause, resume, remove), schedule-firing.ts
--                                                   (fire a due slot, settle its firing)
--   workers      run_workers                         transitions/run-launch.ts, workers.ts,
--                                                   run-recovery.ts (orphaned epochs)
--                worker_child_groups                 transitions/child-groups.ts
--
-- Conventions: times are INTEGER epoch milliseconds from the host's injected clock (SQLite never
-- reads the time); JSON columns hold canonical JSON text of at most 1 MiB; every enumeration has
-- a CHECK; a raw claim token is never stored, only its sha256 hex.

-- Freed pages are returned to the file by `PRAGMA incremental_vacuum` in short steps after a
-- prune (retention.ts); the mode can only be chosen before the first table exists, so
-- openStateStore also sets it on a new file before anything else.
PRAGMA auto_vacuum = INCREMENTAL;

CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- The single host claim. `epoch` only grows; a new host takes epoch + 1 after the old claim
-- expired or was released. Owner columns are all NULL while no host holds it.
-- `pid` and `start_identity` (`pid:starttime`, /proc field 22) name the holder's process, so a
-- starting host can prove a holder dead (SIGKILL, crash) and take the next epoch at once instead
-- of waiting out its lease; a holder that is alive but silent keeps its lease.
CREATE TABLE host_claim (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  epoch INTEGER NOT NULL CHECK (epoch >= 1),
  owner_id TEXT,
  token_hash TEXT,
  acquired_at INTEGER,
  heartbeat_at INTEGER,
  expires_at INTEGER,
  released_at INTEGER,
  pid INTEGER,
  start_identity TEXT,
  CHECK ((owner_id IS NULL) = (token_hash IS NULL) AND (owner_id IS NULL) = (expires_at IS NULL)),
  CHECK (owner_id IS NOT NULL OR (pid IS NULL AND start_identity IS NULL))
);

CREATE TABLE runs (
  run_id TEXT PRIMARY KEY,
  workflow_name TEXT NOT NULL,
  workflow_ref TEXT NOT NULL,
  title TEXT,
  state TEXT NOT NULL CHECK (
    state IN ('queued', 'running', 'waiting', 'completed', 'failed', 'timed_out', 'cancelled')
  ),
  paused INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
  blocked_reason TEXT CHECK (
    blocked_reason IS NULL OR blocked_reason IN (
      'workflowSourceChanged', 'effectAmbiguous', 'unsupportedInput', 'credentialsMissing',
      'budgetExceeded'
    )
  ),
  blocked_detail TEXT,
  -- The interrupted external attempt an operator approved for retry when resuming an
  -- `effectAmbiguous` block (RunFacts.approvedRetry).
  approved_retry_attempt_id TEXT,
  project_path TEXT NOT NULL,
  workflow_source_json TEXT NOT NULL,
  definition_digest TEXT NOT NULL,
  input_json TEXT NOT NULL,
  input_hash TEXT NOT NULL,
  parent_run_id TEXT REFERENCES runs (run_id),
  -- No revision or updated-at column: the run revision is the seq of the run's newest event and
  -- its update time that event's `at` (journal.ts `newestEventSql`), so a change writes no run row.
  created_at INTEGER NOT NULL,
  -- When `state` last changed (set with it): the clock of the controller triggers below, which
  -- run before the change's event exists.
  state_changed_at INTEGER NOT NULL,
  finished_at INTEGER,
  output_json TEXT,
  error_code TEXT,
  error_message TEXT,
  -- 1, 2, ... in enqueue order: the high half of the run's event keys (events.event_key).
  run_no INTEGER NOT NULL UNIQUE CHECK (run_no >= 1),
  -- A fork (`run.rerun`): the run it was forked from, the node it reruns and the parent's attempt
  -- of that node (which visit). Its attempts before that point are adopted copies of the parent's
  -- (node_attempts.adopted_from_attempt_id), committed with the run in one transaction.
  forked_from_run_id TEXT REFERENCES runs (run_id),
  forked_from_node_id TEXT,
  forked_from_attempt_id TEXT REFERENCES node_attempts (attempt_id),
  -- The run's budget (the smaller of the workflow's and the start's; raised by a person): a
  -- model step does not start while the spend of the run's attempts is at or over it.
  budget_cost REAL CHECK (budget_cost IS NULL OR budget_cost >= 0),
  budget_tokens INTEGER CHECK (budget_tokens IS NULL OR budget_tokens >= 0),
  -- A controller's child run: the controller whose budget is a total over all its child runs
  -- (state/budget-stop.ts).
  budget_pool_id TEXT,
  CHECK ((forked_from_run_id IS NULL) = (forked_from_node_id IS NULL) AND
    (forked_from_run_id IS NULL) = (forked_from_attempt_id IS NULL))
);
CREATE INDEX runs_by_state ON runs (state, created_at);
CREATE INDEX runs_by_created ON runs (created_at, run_id);
CREATE INDEX runs_by_parent ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;
CREATE INDEX runs_by_budget_pool ON runs (budget_pool_id) WHERE budget_pool_id IS NOT NULL;
CREATE INDEX runs_by_fork_parent ON runs (forked_from_run_id) WHERE forked_from_run_id IS NOT NULL;
-- Retention walks ended runs in the order they ended (compaction, then the prune past the
-- retention period); written once per run, when it ends.
CREATE INDEX runs_by_finished ON runs (finished_at) WHERE finished_at IS NOT NULL;
-- Whether a definition snapshot is still used (retention deletes the ones no run names); written
-- once per run, at enqueue (and when a source acceptance moves it to another digest).
CREATE INDEX runs_by_definition ON runs (definition_digest);

-- Terminal runs never change again.
CREATE TRIGGER runs_terminal_immutable BEFORE UPDATE ON runs
WHEN OLD.state IN ('completed', 'failed', 'timed_out', 'cancelled')
BEGIN
  SELECT RAISE(ABORT, 'terminal run rows are immutable');
END;
-- Runs are deleted only by a retention prune, which names each run it deletes in `run_prunes`
-- first.
CREATE TRIGGER runs_no_delete BEFORE DELETE ON runs
WHEN NOT EXISTS (SELECT 1 FROM run_prunes WHERE run_id = OLD.run_id)
BEGIN
  SELECT RAISE(ABORT, 'run rows are deleted only by a retention prune');
END;

-- The runs a retention prune is deleting (state/retention/run-marks.ts): the transaction that
-- writes the mark deletes the run's row (so every reader finds the run gone from that commit on)
-- and what points into the run from outside; the run's other rows go in bounded transactions
-- after it, children first, and the mark with the last of them. A mark outlives a crash: the
-- next pass finishes the run. `run_no` keeps the run's event keys from being reused meanwhile
-- (a new run's number is past every run's and every mark's).
CREATE TABLE run_prunes (
  run_id TEXT PRIMARY KEY,
  run_no INTEGER NOT NULL UNIQUE
) WITHOUT ROWID;

-- The scheduler projection of a run; its state must match the run state (spec run/queue table).
CREATE TABLE run_queue (
  run_id TEXT PRIMARY KEY REFERENCES runs (run_id),
  state TEXT NOT NULL CHECK (
    state IN ('queued', 'starting', 'running', 'parked', 'done', 'failed', 'cancelled')
  ),
  available_at INTEGER NOT NULL,
  priority INTEGER NOT NULL DEFAULT 0,
  enqueued_seq INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX run_queue_launchable ON run_queue (state, priority DESC, enqueued_seq);
CREATE TRIGGER run_queue_terminal_immutable BEFORE UPDATE ON run_queue
WHEN OLD.state IN ('done', 'failed', 'cancelled')
BEGIN
  SELECT RAISE(ABORT, 'terminal queue rows are immutable');
END;

-- One row per claimable resource (`run:<id>`). The row survives release so the generation never
-- decreases; a released claim has NULL owner, token and expiry. A host claim names the host epoch
-- that took it: once another host holds a newer epoch the claim is fenced (no write, no renewal)
-- and counts as expired, whatever its expiry says.
CREATE TABLE leases (
  resource TEXT PRIMARY KEY,
  run_id TEXT REFERENCES runs (run_id),
  owner_type TEXT CHECK (owner_type IS NULL OR owner_type IN ('host', 'control')),
  owner_id TEXT,
  token_hash TEXT,
  generation INTEGER NOT NULL CHECK (generation >= 1),
  ttl_ms INTEGER,
  acquired_at INTEGER,
  heartbeat_at INTEGER,
  expires_at INTEGER,
  released_at INTEGER,
  host_epoch INTEGER,
  CHECK (
    (owner_type IS NULL) = (owner_id IS NULL) AND (owner_id IS NULL) = (token_hash IS NULL) AND
    (token_hash IS NULL) = (expires_at IS NULL) AND (expires_at IS NULL) = (ttl_ms IS NULL)
  ),
  CHECK ((owner_type IS 'host') = (host_epoch IS NOT NULL))
);
-- Held claims (status counts expired ones); keyed so that renewal does not rewrite the index.
CREATE INDEX leases_held ON leases (resource) WHERE token_hash IS NOT NULL;
CREATE INDEX leases_by_run ON leases (run_id) WHERE run_id IS NOT NULL;

CREATE TABLE run_bindings (
  run_id TEXT PRIMARY KEY REFERENCES runs (run_id),
  execution_mode TEXT NOT NULL CHECK (execution_mode IN ('interactive', 'headless')),
  origin_session_id TEXT,
  -- Headless runs: the Pi command (absolute path) and the model arguments recorded at start, so
  -- every attempt (also after a resume or a host restart) starts the same Pi the same way. Never
  -- a credential (`--api-key` is refused at start).
  pi_command TEXT,
  pi_args_json TEXT,
  -- Headless runs with Pi: what the Pi children load besides the step ('none', or 'project':
  -- context files and skills), and the run's one Pi session file, chosen by the host at start
  -- (<stateDir>/sessions/<runId>/run.jsonl, 0600 in 0700 directories), which every Pi child of
  -- the run continues. Kept after the run ends, for its owner to open with `pi --session`.
  pi_context TEXT CHECK (pi_context IN ('none', 'project')),
  pi_session_file TEXT,
  created_at INTEGER NOT NULL,
  CHECK (execution_mode = 'headless' OR origin_session_id IS NOT NULL),
  CHECK ((pi_command IS NULL) = (pi_args_json IS NULL)),
  CHECK ((pi_command IS NULL) = (pi_context IS NULL)),
  CHECK ((pi_command IS NULL) = (pi_session_file IS NULL))
);
-- Session reservations (one active interactive run per session) and session reads.
CREATE INDEX run_bindings_by_session ON run_bindings (origin_session_id)
WHERE origin_session_id IS NOT NULL;

-- The run environment (protocol/run-environment.ts): the variables its workers and resolver run
-- with, as the starting client defined them. Private: read only to launch workers, never shown in
-- status, events or viewer deltas. Deleted when the run ends (nothing can launch it again).
-- credential_names_json: the names (never the values) of the provider credentials the run's Pi
-- children get; the values live in the host's memory only (protocol/credential-names.ts).
-- run_secret_names_json: those of them the user named (`--env NAME`): meant for the run, they
-- also reach its workers and their shell and action nodes (a discovered provider key: Pi alone).
CREATE TABLE run_environments (
  run_id TEXT PRIMARY KEY REFERENCES runs (run_id),
  env_json TEXT NOT NULL,
  credential_names_json TEXT NOT NULL DEFAULT '[]',
  run_secret_names_json TEXT NOT NULL DEFAULT '[]'
);
CREATE TRIGGER run_environments_end AFTER UPDATE OF state ON runs
WHEN NEW.state IN ('completed', 'failed', 'timed_out', 'cancelled')
BEGIN
  DELETE FROM run_environments WHERE run_id = NEW.run_id;
END;

-- The function-free graph of a compiled workflow (protocol/definition-snapshot.ts), stored once
-- per definition digest at run.start so viewers draw the graph without loading workflow code.
CREATE TABLE workflow_definitions (
  definition_digest TEXT PRIMARY KEY,
  snapshot_json TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

-- Immutable, ordered per run (seq 1, 2, ...). Payloads are small summaries, never outputs.
-- An event a worker message produced carries that message's receipt (spec "Worker protocol": a
-- retry receives the same answer): `request_id` (the worker message id, `<epoch>.<n>`), the
-- message's fingerprint (the 32 bytes of its sha256, message-receipts.ts) and, when the answer
-- quotes the change's result (an effect reservation), `receipt_json`. The accepted revision is the
-- event's own. Kept here rather than in a receipts table: the event row is written anyway, so a
-- receipt costs one small index entry instead of two B-trees.
-- `event_key` = run_no * 2^32 + seq: one integer key in (run, seq) order, so a run's events are
-- one key range and a run appends at its range's end. An integer-keyed table stores rows in its
-- leaves only and SQLite splits it by a new right page when it appends at the end, where a
-- (run_id, seq) key would copy whole rows into interior pages and rebalance three leaves per
-- split (1 node boundary's events: ~1.4 pages per event; now ~1.0).
CREATE TABLE events (
  event_key INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id),
  seq INTEGER NOT NULL CHECK (seq >= 1 AND seq < 4294967296),
  type TEXT NOT NULL,
  run_revision INTEGER NOT NULL,
  payload_json TEXT NOT NULL,
  at INTEGER NOT NULL,
  request_id TEXT,
  request_fingerprint BLOB,
  receipt_json TEXT,
  CHECK ((request_id IS NULL) = (request_fingerprint IS NULL)),
  CHECK (request_id IS NOT NULL OR receipt_json IS NULL)
);
-- One event per worker message id: a retried message is refused by this key, then answered from
-- the stored receipt. Message ids are `<epoch>.<n>`, n zero-padded, so one epoch appends in order.
CREATE UNIQUE INDEX events_by_request ON events (request_id) WHERE request_id IS NOT NULL;
CREATE TRIGGER events_no_update BEFORE UPDATE OF
  event_key, run_id, seq, type, run_revision, payload_json, at ON events
BEGIN
  SELECT RAISE(ABORT, 'events are immutable');
END;
-- Compaction clears the worker-message receipt of an ended run's events (no worker can retry
-- once the run ended and its retry window passed); nothing else of an event ever changes.
CREATE TRIGGER events_receipt_compaction BEFORE UPDATE OF
  request_id, request_fingerprint, receipt_json ON events
WHEN NEW.request_id IS NOT NULL OR NEW.receipt_json IS NOT NULL OR NOT EXISTS (
  SELECT 1 FROM runs WHERE run_id = OLD.run_id AND finished_at IS NOT NULL
)
BEGIN
  SELECT RAISE(ABORT, 'event receipts are only cleared once their run ended');
END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM run_prunes WHERE run_id = OLD.run_id)
BEGIN
  SELECT RAISE(ABORT, 'events are deleted only with their run, by a retention prune');
END;

-- One small delta per committed change, in one global order (`revision`), so a viewer follows
-- every run by polling `revision > last seen` without reading payloads. A change feed, not a
-- record: retention trims the oldest deltas (a prefix of the order, so the rowid alias still
-- grows monotonically without AUTOINCREMENT's extra page write per commit), and a viewer whose
-- position fell below the oldest one reloads. `run_id` names a run that may since have been
-- pruned (no foreign key: a run's deltas are found only by revision, and an index on run_id
-- would cost every commit one more B-tree). A delta of no run (`run_id` NULL) concerns the feed's
-- readers as a whole: `runs.pruned` (a retention pass deleted runs) makes a viewer reload.
CREATE TABLE viewer_deltas (
  revision INTEGER PRIMARY KEY,
  run_id TEXT,
  run_revision INTEGER NOT NULL,
  kind TEXT NOT NULL,
  summary_json TEXT NOT NULL,
  at INTEGER NOT NULL
);

-- Only the oldest delta goes (the feed's prefix), so the feed never has a gap inside it.
CREATE TRIGGER viewer_deltas_prefix_only BEFORE DELETE ON viewer_deltas
WHEN OLD.revision <> (SELECT MIN(revision) FROM viewer_deltas)
BEGIN
  SELECT RAISE(ABORT, 'viewer deltas are trimmed oldest first');
END;

CREATE TABLE node_attempts (
  attempt_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id),
  sequence INTEGER NOT NULL CHECK (sequence >= 1),
  node_id TEXT NOT NULL,
  node_kind TEXT NOT NULL,
  effect TEXT NOT NULL CHECK (effect IN ('pure', 'external')),
  state TEXT NOT NULL CHECK (
    state IN ('running', 'waiting', 'ok', 'failed', 'timed_out', 'cancelled', 'interrupted')
  ),
  generation INTEGER NOT NULL,
  output_json TEXT,
  error_code TEXT,
  error_message TEXT,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  -- Resolved wall-clock deadline; NULL when the node declares no timeout.
  deadline_at INTEGER,
  -- A fork's adopted attempt: the parent's attempt it copies (same node, kind, state, output,
  -- error and times; generation 0: it never ran under one of this run's claims).
  adopted_from_attempt_id TEXT REFERENCES node_attempts (attempt_id),
  -- A model step's usage (protocol/step-usage.ts, canonical JSON: tokens by kind, cost,
  -- provider, model, an agent group's members), set with the attempt's outcome or, for a long
  -- step, as it goes (always the attempt's whole usage so far, never an increment). Its token
  -- sum and cost are kept beside it for the run's spend (NULL cost: no price known).
  usage_json TEXT,
  usage_tokens INTEGER CHECK (usage_tokens IS NULL OR usage_tokens >= 0),
  usage_cost REAL CHECK (usage_cost IS NULL OR usage_cost >= 0),
  -- A model step's submissions in this attempt (protocol/submissions.ts): how many the model
  -- submitted, how many the node's rules rejected, and the last rejection's message (bounded).
  submitted INTEGER NOT NULL DEFAULT 0 CHECK (submitted >= 0),
  rejected INTEGER NOT NULL DEFAULT 0 CHECK (rejected >= 0 AND rejected <= submitted),
  last_rejection TEXT,
  UNIQUE (run_id, sequence)
);
-- At most one open attempt per run.
CREATE UNIQUE INDEX node_attempts_one_open ON node_attempts (run_id)
WHERE state IN ('running', 'waiting');
CREATE INDEX node_attempts_deadlines ON node_attempts (deadline_at)
WHERE state IN ('running', 'waiting') AND deadline_at IS NOT NULL;
-- A run's spend (run-spend.ts): only model steps carry usage, so only they are in it.
CREATE INDEX node_attempts_usage ON node_attempts (run_id, usage_tokens, usage_cost)
WHERE usage_tokens IS NOT NULL;
-- The host deadline timer's next waiting attempt to time out (checkpoints, decisions, requests).
CREATE INDEX node_attempts_waiting_deadlines ON node_attempts (deadline_at)
WHERE state = 'waiting' AND deadline_at IS NOT NULL;

-- Latest update per (run, type, key) and how many were received.
CREATE TABLE node_updates (
  run_id TEXT NOT NULL REFERENCES runs (run_id),
  type TEXT NOT NULL,
  key TEXT NOT NULL,
  attempt_id TEXT NOT NULL REFERENCES node_attempts (attempt_id),
  data_json TEXT NOT NULL,
  count INTEGER NOT NULL CHECK (count >= 1),
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, type, key)
);

-- A checkpoint or protected human decision a waiting run asks. An answer resumes the same run in
-- place (there is no continuation run): the attempt becomes `ok` with the answer as its output.
CREATE TABLE human_decisions (
  decision_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id),
  attempt_id TEXT NOT NULL UNIQUE REFERENCES node_attempts (attempt_id),
  node_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('checkpoint', 'humanDecision')),
  request_json TEXT NOT NULL,
  -- A checkpoint's declared answer shape (a JSON Schema subset), checked before an answer commits.
  answer_schema_json TEXT,
  -- A human decision's saved `onTimeout` default, recorded at `default_at` unless answered first.
  default_at INTEGER,
  default_answer_json TEXT,
  state TEXT NOT NULL CHECK (state IN ('pending', 'resolved', 'timedOut', 'cancelled')),
  created_at INTEGER NOT NULL,
  closed_at INTEGER,
  CHECK ((default_at IS NULL) = (default_answer_json IS NULL))
);
CREATE INDEX human_decisions_pending ON human_decisions (state, created_at);
-- The host deadline timer's next decision default to apply.
CREATE INDEX human_decisions_default_due ON human_decisions (state, default_at)
WHERE default_at IS NOT NULL;

-- How a decision closed: answered (a person, or the model for a checkpoint), its saved default
-- at the deadline, the author's `timeoutMs` while waiting, or the run's cancellation.
CREATE TABLE human_decision_resolutions (
  decision_id TEXT PRIMARY KEY REFERENCES human_decisions (decision_id),
  resolution TEXT NOT NULL CHECK (
    resolution IN ('answered', 'timeoutDefault', 'timedOut', 'cancelled')
  ),
  answer_json TEXT,
  resolved_at INTEGER NOT NULL
);

-- An effect belongs to a run attempt or to a controller resource (its reconciles), never both.
CREATE TABLE effects (
  effect_id TEXT PRIMARY KEY,
  run_id TEXT REFERENCES runs (run_id),
  attempt_id TEXT REFERENCES node_attempts (attempt_id),
  resource_uid TEXT REFERENCES controller_resources (uid),
  -- Source resource + effect type + author idempotency key.
  effect_key TEXT NOT NULL UNIQUE,
  effect_type TEXT NOT NULL,
  request_fingerprint TEXT NOT NULL,
  -- How a retry after an uncertain stop stays safe: apply again under the key, read back first,
  -- or never (the effect becomes ambiguous). Controller reconciles follow it when interrupted.
  contract TEXT NOT NULL DEFAULT 'idempotencyKey' CHECK (
    contract IN ('idempotencyKey', 'readBack', 'nonResumable')
  ),
  state TEXT NOT NULL CHECK (
    state IN ('pending', 'applying', 'applied', 'rejected', 'cancelled', 'ambiguous')
  ),
  receipt_json TEXT,
  error_code TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  CHECK ((run_id IS NULL) = (attempt_id IS NULL) AND (run_id IS NULL) <> (resource_uid IS NULL))
);
CREATE INDEX effects_by_state ON effects (state);
CREATE INDEX effects_by_attempt ON effects (attempt_id);
CREATE INDEX effects_by_resource ON effects (resource_uid) WHERE resource_uid IS NOT NULL;

CREATE TABLE effect_attempts (
  effect_id TEXT NOT NULL REFERENCES effects (effect_id),
  attempt_no INTEGER NOT NULL CHECK (attempt_no >= 1),
  generation INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('applying', 'applied', 'rejected', 'ambiguous', 'cancelled')),
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  PRIMARY KEY (effect_id, attempt_no)
);

-- Passive session-addressed messages of notify nodes, committed in the transaction that finishes
-- the node's attempt: one per run, node and visit (`notification_index`, the node's visit number).
-- Addressed to the run's origin session (NULL for a headless run: readable in status only). A Pi
-- session claims them through the host under a short lease held by one request (`claimed` while
-- it has not expired), so two Pi processes on one session never both show one, and records the
-- public session entry that shows it (`delivered`).
CREATE TABLE notifications (
  notification_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id),
  attempt_id TEXT NOT NULL UNIQUE REFERENCES node_attempts (attempt_id),
  node_id TEXT NOT NULL,
  notification_index INTEGER NOT NULL CHECK (notification_index >= 1),
  target_session_id TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('progress', 'final')),
  message TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'claimed', 'delivered')),
  claim_token_hash TEXT,
  claim_expires_at INTEGER,
  session_entry_id TEXT,
  created_at INTEGER NOT NULL,
  delivered_at INTEGER,
  UNIQUE (run_id, node_id, notification_index),
  CHECK ((state = 'claimed') = (claim_token_hash IS NOT NULL)),
  CHECK ((claim_token_hash IS NULL) = (claim_expires_at IS NULL)),
  CHECK ((state = 'delivered') = (session_entry_id IS NOT NULL))
);
CREATE INDEX notifications_undelivered ON notifications (target_session_id, created_at)
WHERE state != 'delivered' AND target_session_id IS NOT NULL;
CREATE INDEX notifications_by_run ON notifications (run_id, created_at);

-- Turns the origin Pi session owes the model: the completion presentation (`presentation`,
-- inserted ineligible before the terminal commit, made eligible by it) and successor turns
-- when a workflow ends or strands the model's turn (`failed`, `timedOut`, `launchFailed`).
-- The id is derived from the cause (`turn:<run>:<cause>[:<attempt>]`), so a retried proposal or
-- a restart never records two. `eligible_at` is NULL while the turn must not start; at most one
-- unresolved intent per run is eligible (one successor turn). Claimed under a short lease like
-- notifications; resolved with the public session entry that started the turn, by the next
-- step prompt of the run (`workflowPrompt`), or `superseded` (a newer run, a user turn, a
-- user's cancel).
CREATE TABLE turn_intents (
  intent_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id),
  target_session_id TEXT NOT NULL,
  cause TEXT NOT NULL CHECK (cause IN ('presentation', 'timedOut', 'failed', 'launchFailed')),
  -- The stranded step's attempt (a step timeout), else NULL.
  source_attempt_id TEXT,
  -- `{prompt}` for a presentation; `{}` otherwise (the text is built from the run at claim time).
  facts_json TEXT NOT NULL,
  eligible_at INTEGER,
  state TEXT NOT NULL CHECK (state IN ('pending', 'claimed', 'resolved')),
  claim_token_hash TEXT,
  claim_expires_at INTEGER,
  resolution TEXT CHECK (
    resolution IS NULL OR resolution IN ('workflowPrompt', 'presentation', 'fallback', 'superseded')
  ),
  session_entry_id TEXT,
  created_at INTEGER NOT NULL,
  resolved_at INTEGER,
  CHECK ((state = 'claimed') = (claim_token_hash IS NOT NULL)),
  CHECK ((claim_token_hash IS NULL) = (claim_expires_at IS NULL)),
  CHECK ((state = 'resolved') = (resolution IS NOT NULL)),
  CHECK ((state = 'resolved') = (resolved_at IS NOT NULL))
);
CREATE UNIQUE INDEX turn_intents_one_eligible ON turn_intents (run_id)
WHERE eligible_at IS NOT NULL AND state != 'resolved';
CREATE INDEX turn_intents_open ON turn_intents (target_session_id, eligible_at)
WHERE state != 'resolved';
-- A run's intents (open ones: cancel supersedes them; all: a prune deletes them).
CREATE INDEX turn_intents_by_run ON turn_intents (run_id);

-- Command receipts of clients, committed in the same transaction as the change they acknowledge
-- (worker-message receipts live in the events they produced). Keyed by request id alone (one
-- B-tree: the key is the row): the key already names one request, so it carries one fingerprint.
CREATE TABLE host_commands (
  request_id TEXT PRIMARY KEY NOT NULL,
  client_id TEXT NOT NULL,
  operation TEXT NOT NULL,
  idempotency_key TEXT,
  request_fingerprint TEXT NOT NULL,
  run_id TEXT REFERENCES runs (run_id),
  accepted_revision INTEGER,
  outcome TEXT NOT NULL CHECK (
    outcome IN ('accepted', 'adopted', 'rejected', 'conflict', 'notFound', 'claimLost', 'unavailable')
  ),
  receipt_json TEXT NOT NULL,
  receipt_hash TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  completed_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX host_commands_by_key ON host_commands (client_id, operation, idempotency_key)
WHERE idempotency_key IS NOT NULL;
-- A run's receipts: a prune keeps a run while one is young enough to be retried, then deletes
-- them with it; receipts of no run are pruned by age (`completed_at`).
CREATE INDEX host_commands_by_run ON host_commands (run_id, completed_at) WHERE run_id IS NOT NULL;
CREATE INDEX host_commands_by_age ON host_commands (completed_at) WHERE run_id IS NULL;

-- Origin-session model steps (agent, decision, assistant message) waiting for the Pi session.
-- `contract_json` is the step contract the worker proposed (message text, ids, expected output);
-- one attempt has at most one request. The session presents its oldest pending request; the
-- presentation's public session entry id is adopted after a Pi restart instead of a second send.
CREATE TABLE interactive_requests (
  request_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id),
  attempt_id TEXT NOT NULL UNIQUE REFERENCES node_attempts (attempt_id),
  node_id TEXT NOT NULL,
  target_session_id TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('agent', 'assistantMessage', 'checkpoint', 'humanDecision')),
  contract_json TEXT NOT NULL,
  contract_hash TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'settled', 'cancelled', 'timedOut', 'failed')),
  accepted_submission_id TEXT,
  -- Reminders presented after a turn ended without a submission.
  reminders INTEGER NOT NULL DEFAULT 0 CHECK (reminders >= 0),
  claimed_at INTEGER,
  presentation_entry_id TEXT,
  presented_at INTEGER,
  created_at INTEGER NOT NULL,
  settled_at INTEGER
);
CREATE INDEX interactive_requests_pending ON interactive_requests (target_session_id, status, created_at);
-- `run.status` of a waiting interactive run finds its pending request.
CREATE INDEX interactive_requests_run_pending ON interactive_requests (run_id) WHERE status = 'pending';

-- Submissions of a request, keyed by the tool-call id. `validating` until the validation child
-- reports; the payload stays so a restarted host can validate it again in a new child.
CREATE TABLE interactive_submissions (
  submission_id TEXT PRIMARY KEY,
  request_id TEXT NOT NULL REFERENCES interactive_requests (request_id),
  idempotency_key TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  payload_hash TEXT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('validating', 'accepted', 'rejected')),
  error_code TEXT,
  error_message TEXT,
  receipt_hash TEXT,
  submitted_at INTEGER NOT NULL,
  decided_at INTEGER,
  UNIQUE (request_id, idempotency_key)
);
-- One submission of a request is validated at a time.
CREATE UNIQUE INDEX interactive_submissions_validating ON interactive_submissions (request_id)
WHERE outcome = 'validating';

-- Worker epochs: several per (run, generation) over time, at most one active per run.
CREATE TABLE run_workers (
  worker_epoch TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id),
  generation INTEGER NOT NULL,
  launch_envelope_hash TEXT NOT NULL,
  pid INTEGER,
  start_identity TEXT,
  status TEXT NOT NULL CHECK (
    status IN ('starting', 'live', 'exited', 'cancelled', 'timedOut', 'crashed', 'claimLost', 'orphaned')
  ),
  started_at INTEGER NOT NULL,
  ready_at INTEGER,
  finished_at INTEGER,
  exit_code INTEGER,
  signal TEXT,
  diagnostic_hash TEXT
);
CREATE UNIQUE INDEX run_workers_one_active ON run_workers (run_id)
WHERE status IN ('starting', 'live');
CREATE INDEX run_workers_active ON run_workers (status) WHERE status IN ('starting', 'live');
-- A run's worker epochs (compaction of an ended run, a prune).
CREATE INDEX run_workers_by_run ON run_workers (run_id);

-- Process groups a worker attached to host supervision (`process.register`: a shell node's
-- command, a headless Pi): a direct child of the worker leading its own group, named by PID and
-- start time. Written in the transaction that checks and renews the run claim; removed when the
-- worker unregisters it or the host has reaped it. A restarted host reaps exact identities only.
CREATE TABLE worker_child_groups (
  worker_epoch TEXT NOT NULL REFERENCES run_workers (worker_epoch),
  pid INTEGER NOT NULL CHECK (pid >= 1),
  start_time TEXT NOT NULL,
  registered_at INTEGER NOT NULL,
  PRIMARY KEY (worker_epoch, pid, start_time)
) WITHOUT ROWID;

-- Children the host starts that are not run workers (validation children, source resolvers),
-- named by PID and start time while they live: a restarted host reaps the ones an earlier host
-- left running (exact identities only: a child stuck in synchronous workflow code never sees its
-- channel close), then clears the rows. Workers are named in `run_workers` instead.
CREATE TABLE host_children (
  pid INTEGER NOT NULL CHECK (pid >= 1),
  start_time TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('validator', 'resolver')),
  run_id TEXT,
  registered_at INTEGER NOT NULL,
  PRIMARY KEY (pid, start_time)
) WITHOUT ROWID;

-- Controllers (docs/controllers.md). A controller is one name in one project, pinned to the exact
-- source its resolver loaded (`source_json` is the identity a controller worker verifies before
-- it loads anything; `source_digest` its fingerprint). A changed source blocks it until the next
-- `controller.apply` pins the new one.
CREATE TABLE controllers (
  controller_id TEXT PRIMARY KEY,
  project_path TEXT NOT NULL,
  name TEXT NOT NULL,
  source_ref TEXT NOT NULL,
  source_json TEXT NOT NULL,
  source_digest TEXT NOT NULL,
  timeout_ms INTEGER NOT NULL CHECK (timeout_ms >= 1),
  blocked_reason TEXT CHECK (blocked_reason IS NULL OR blocked_reason IN ('sourceChanged', 'loadFailed')),
  blocked_detail TEXT,
  -- The Pi command and model arguments the last apply that named one declared: headless child
  -- runs with agent steps run with it (spec "Controllers": the declared provider path).
  pi_command TEXT,
  pi_args_json TEXT,
  -- Its budget over all its child runs together: what its definition declares (set with each
  -- child it starts; NULL: no limit) plus what people raised it by (`budget --raise`).
  budget_cost REAL CHECK (budget_cost IS NULL OR budget_cost >= 0),
  budget_tokens INTEGER CHECK (budget_tokens IS NULL OR budget_tokens >= 0),
  budget_raised_cost REAL NOT NULL DEFAULT 0 CHECK (budget_raised_cost >= 0),
  budget_raised_tokens INTEGER NOT NULL DEFAULT 0 CHECK (budget_raised_tokens >= 0),
  revision INTEGER NOT NULL CHECK (revision >= 1),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (project_path, name)
);

-- Resources: `resource_version` grows with every write (the compare-and-set token), `generation`
-- only with a spec change. A removed resource stays as a tombstone (`removed_at`) so its effects,
-- child requests and events keep their owner; its key can be applied again as a new uid.
CREATE TABLE controller_resources (
  uid TEXT PRIMARY KEY,
  controller_id TEXT NOT NULL REFERENCES controllers (controller_id),
  resource_key TEXT NOT NULL,
  resource_version INTEGER NOT NULL CHECK (resource_version >= 1),
  generation INTEGER NOT NULL CHECK (generation >= 1),
  spec_json TEXT NOT NULL,
  status_json TEXT NOT NULL,
  finalizers_json TEXT NOT NULL,
  deletion_requested_at INTEGER,
  removed_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  CHECK (removed_at IS NULL OR deletion_requested_at IS NOT NULL)
);
CREATE UNIQUE INDEX controller_resources_live ON controller_resources (controller_id, resource_key)
WHERE removed_at IS NULL;
CREATE TRIGGER controller_resources_no_delete BEFORE DELETE ON controller_resources
BEGIN
  SELECT RAISE(ABORT, 'controller resources are removed as tombstones, never deleted');
END;

-- The deduplicated reconcile queue: one row per live resource. `pending` means a reconcile is
-- wanted from `available_at` on; `version` grows with every request, and a claim remembers the
-- version it started from (`claim_version`, set exactly while a `reconcile:<uid>` lease is held),
-- so a request that arrives during a reconcile is never lost.
CREATE TABLE controller_queue (
  uid TEXT PRIMARY KEY REFERENCES controller_resources (uid),
  pending INTEGER NOT NULL CHECK (pending IN (0, 1)),
  available_at INTEGER NOT NULL,
  version INTEGER NOT NULL CHECK (version >= 1),
  claim_version INTEGER,
  consecutive_errors INTEGER NOT NULL CHECK (consecutive_errors >= 0),
  last_error_code TEXT,
  last_error_message TEXT,
  updated_at INTEGER NOT NULL
);
CREATE INDEX controller_queue_due ON controller_queue (available_at)
WHERE pending = 1 AND claim_version IS NULL;
CREATE INDEX controller_queue_claimed ON controller_queue (uid) WHERE claim_version IS NOT NULL;

-- The retention pass that deletes controller history (state/retention/controller-history.ts)
-- writes this row at the start of each of its transactions and deletes it before the commit, so
-- it is never seen outside one: while it is there, the events and the ended worker epochs older
-- than `before` may be deleted (the two tables' delete triggers); at any other time they may not.
CREATE TABLE controller_prunes (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  before INTEGER NOT NULL
);

-- Controller worker processes: one active per controller; several sequential epochs over time.
CREATE TABLE controller_workers (
  worker_epoch TEXT PRIMARY KEY,
  controller_id TEXT NOT NULL REFERENCES controllers (controller_id),
  source_digest TEXT NOT NULL,
  pid INTEGER,
  start_identity TEXT,
  status TEXT NOT NULL CHECK (
    status IN ('starting', 'live', 'exited', 'cancelled', 'timedOut', 'crashed', 'orphaned')
  ),
  started_at INTEGER NOT NULL,
  ready_at INTEGER,
  finished_at INTEGER,
  exit_code INTEGER,
  signal TEXT
);
CREATE UNIQUE INDEX controller_workers_one_active ON controller_workers (controller_id)
WHERE status IN ('starting', 'live');
-- A controller's newest epoch (retention keeps it): one index probe per candidate of the prune.
CREATE INDEX controller_workers_by_controller ON controller_workers (controller_id);
-- Only a retention pass deletes an epoch: one that ended before its period (controller_prunes).
CREATE TRIGGER controller_workers_no_delete BEFORE DELETE ON controller_workers
WHEN OLD.status IN ('starting', 'live') OR NOT EXISTS (
  SELECT 1 FROM controller_prunes WHERE OLD.finished_at < before
)
BEGIN
  SELECT RAISE(ABORT, 'controller workers are deleted only by a retention prune');
END;

-- Approved session bindings (spec "Controllers"): a person in a Pi session approved, from that
-- session (`/controller bind`), that this controller's interactive child runs use it as their
-- origin session. `session_id` is private: never in receipts, status, events or logs. At most one
-- live binding per controller; a new approval revokes the old one in its transaction. Revoking
-- stops new child runs from using it; runs already started keep their origin session.
CREATE TABLE controller_session_bindings (
  binding_id TEXT PRIMARY KEY,
  controller_id TEXT NOT NULL REFERENCES controllers (controller_id),
  session_id TEXT NOT NULL,
  approved_at INTEGER NOT NULL,
  revoked_at INTEGER,
  CHECK (revoked_at IS NULL OR revoked_at >= approved_at)
);
CREATE UNIQUE INDEX controller_session_bindings_live ON controller_session_bindings (controller_id)
WHERE revoked_at IS NULL;

-- Child workflow requests of a resource, one per request key. `run_id` is the current attempt's
-- run (NULL until it is enqueued, or when resolving the workflow failed: `error_*`). An
-- `interactive` request runs in the controller's approved session (`binding_id`: the binding its
-- run started under); without a live binding it waits `unsupportedInput`, while that session has
-- another active run `sessionBusy` (`waiting_reason`, no run yet).
CREATE TABLE controller_workflow_requests (
  request_id TEXT PRIMARY KEY,
  uid TEXT NOT NULL REFERENCES controller_resources (uid),
  request_key TEXT NOT NULL,
  workflow TEXT NOT NULL,
  input_fingerprint TEXT NOT NULL,
  attempt INTEGER NOT NULL CHECK (attempt >= 1),
  run_id TEXT UNIQUE REFERENCES runs (run_id),
  error_code TEXT,
  error_message TEXT,
  interactive INTEGER NOT NULL CHECK (interactive IN (0, 1)),
  binding_id TEXT REFERENCES controller_session_bindings (binding_id),
  waiting_reason TEXT CHECK (waiting_reason IS NULL OR waiting_reason IN ('unsupportedInput', 'sessionBusy')),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (uid, request_key),
  CHECK (waiting_reason IS NULL OR (interactive = 1 AND run_id IS NULL)),
  CHECK (binding_id IS NULL OR (interactive = 1 AND run_id IS NOT NULL))
);
CREATE INDEX controller_workflow_requests_waiting ON controller_workflow_requests (waiting_reason)
WHERE waiting_reason IS NOT NULL;

-- Immutable history per resource (payloads are ids, states and codes; never specs or outputs).
CREATE TABLE controller_events (
  event_id INTEGER PRIMARY KEY,
  uid TEXT NOT NULL REFERENCES controller_resources (uid),
  resource_version INTEGER NOT NULL,
  type TEXT NOT NULL,
  payload_json TEXT NOT NULL,
  at INTEGER NOT NULL
);
CREATE INDEX controller_events_by_uid ON controller_events (uid, event_id);
CREATE TRIGGER controller_events_no_update BEFORE UPDATE ON controller_events
BEGIN
  SELECT RAISE(ABORT, 'controller events are immutable');
END;
CREATE TRIGGER controller_events_no_delete BEFORE DELETE ON controller_events
WHEN NOT EXISTS (SELECT 1 FROM controller_prunes WHERE OLD.at < before)
BEGIN
  SELECT RAISE(ABORT, 'controller events are deleted only by a retention prune');
END;

-- A controller child run that starts waiting or ends asks for its parent's reconcile, in the same
-- transaction as the run's own transition (no run transition needs to know about controllers).
CREATE TRIGGER controller_child_settled AFTER UPDATE OF state ON runs
WHEN NEW.state <> OLD.state AND
  NEW.state IN ('waiting', 'completed', 'failed', 'timed_out', 'cancelled') AND
  EXISTS (SELECT 1 FROM controller_workflow_requests WHERE run_id = NEW.run_id)
BEGIN
  UPDATE controller_queue SET
    available_at = CASE WHEN pending = 1 THEN min(available_at, NEW.state_changed_at)
      ELSE NEW.state_changed_at END,
    pending = 1, version = version + 1, updated_at = NEW.state_changed_at
  WHERE uid = (SELECT uid FROM controller_workflow_requests WHERE run_id = NEW.run_id);
  INSERT INTO controller_events (uid, resource_version, type, payload_json, at)
  SELECT w.uid, r.resource_version, 'child.' || NEW.state,
    json_object('requestId', w.request_id, 'runId', NEW.run_id), NEW.state_changed_at
  FROM controller_workflow_requests w JOIN controller_resources r ON r.uid = w.uid
  WHERE w.run_id = NEW.run_id AND r.removed_at IS NULL;
END;

-- An interactive run that ends frees its origin session: controller children that wait for that
-- session (`sessionBusy`, under the live binding of their controller) ask for their parent's
-- reconcile, which starts them. The EXISTS keeps this to one index probe per run transition.
CREATE TRIGGER controller_session_freed AFTER UPDATE OF state ON runs
WHEN NEW.state <> OLD.state AND NEW.state IN ('completed', 'failed', 'timed_out', 'cancelled') AND
  EXISTS (SELECT 1 FROM controller_workflow_requests WHERE waiting_reason = 'sessionBusy')
BEGIN
  UPDATE controller_queue SET
    available_at = CASE WHEN pending = 1 THEN min(available_at, NEW.state_changed_at)
      ELSE NEW.state_changed_at END,
    pending = 1, version = version + 1, updated_at = NEW.state_changed_at
  WHERE uid IN (
    SELECT w.uid FROM controller_workflow_requests w
    JOIN controller_resources r ON r.uid = w.uid
    JOIN controller_session_bindings b ON b.controller_id = r.controller_id AND b.revoked_at IS NULL
    JOIN run_bindings rb ON rb.run_id = NEW.run_id AND rb.origin_session_id = b.session_id
    WHERE w.waiting_reason = 'sessionBusy'
  );
END;

-- Schedules (docs/schedules.md): a named timing that starts headless runs of one workflow. The
-- workflow is resolved again at every firing (`workflow` as the user named it, in
-- `project_path`); `workflow_ref`, `workflow_source_json`, `definition_digest` and `input_hash`
-- are what it last resolved to,
-- recorded on the failed run of a firing whose workflow no longer loads. `env_json` is the
-- private run environment of its runs (never shown); credentials live in the host's memory only.
-- Timing: `cron` in `time_zone`, or `every_ms` from `anchor_at`. `next_fire_at` is the next slot,
-- NULL exactly while paused; the host deadline timer fires the due ones (schedule-firing.ts).
CREATE TABLE schedules (
  schedule_id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  workflow TEXT NOT NULL,
  workflow_name TEXT NOT NULL,
  workflow_ref TEXT NOT NULL,
  project_path TEXT NOT NULL,
  cron TEXT,
  time_zone TEXT,
  every_ms INTEGER CHECK (every_ms IS NULL OR every_ms >= 1000),
  anchor_at INTEGER,
  overlap TEXT NOT NULL CHECK (overlap IN ('skip', 'queue', 'cancel-previous')),
  catch_up TEXT NOT NULL CHECK (catch_up IN ('none', 'latest', 'all-bounded')),
  input_json TEXT NOT NULL,
  input_hash TEXT NOT NULL,
  workflow_source_json TEXT NOT NULL,
  definition_digest TEXT NOT NULL,
  env_json TEXT NOT NULL,
  credential_names_json TEXT NOT NULL DEFAULT '[]',
  -- Of those, the secrets named with --env: its runs' workers and nodes get them too (names only).
  run_secret_names_json TEXT NOT NULL DEFAULT '[]',
  pi_command TEXT,
  pi_args_json TEXT,
  -- `command` (schedule add) or `file` (schedule apply of a workflow file's declaration).
  origin TEXT NOT NULL CHECK (origin IN ('command', 'file')),
  paused INTEGER NOT NULL CHECK (paused IN (0, 1)),
  paused_reason TEXT,
  next_fire_at INTEGER,
  last_fired_at INTEGER,
  missed_slots INTEGER NOT NULL DEFAULT 0 CHECK (missed_slots >= 0),
  -- Firings in a row whose workflow did not load; the third pauses the schedule.
  load_failures INTEGER NOT NULL DEFAULT 0 CHECK (load_failures >= 0),
  revision INTEGER NOT NULL CHECK (revision >= 1),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  CHECK ((cron IS NULL) <> (every_ms IS NULL)),
  CHECK ((cron IS NULL) = (time_zone IS NULL)),
  CHECK ((every_ms IS NULL) = (anchor_at IS NULL)),
  CHECK ((paused = 1) = (next_fire_at IS NULL)),
  CHECK (paused = 1 OR paused_reason IS NULL),
  CHECK ((pi_command IS NULL) = (pi_args_json IS NULL))
);
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE next_fire_at IS NOT NULL;

-- What a schedule did at each slot it fired, committed with the schedule's next slot, so a slot
-- is fired once whatever crashes: `pending` until its run exists (the workflow is resolved in a
-- supervised child first), then `started` (`run_id`, derived from schedule and slot, so a retry
-- after a crash finds the same run), `skipped` (`reason`: the previous run was active) or
-- `failed` (the workflow did not load: `run_id` is a failed run that shows the error). A
-- `queue` overlap run waits in run_queue with `available_at` at the far end of time until the
-- schedule's active run ends (trigger below). `run_id` is no foreign key: runs outlive firings,
-- and firings are trimmed per schedule while their runs may be pruned.
CREATE TABLE schedule_firings (
  schedule_id TEXT NOT NULL REFERENCES schedules (schedule_id),
  slot_at INTEGER NOT NULL,
  run_id TEXT UNIQUE,
  state TEXT NOT NULL CHECK (state IN ('pending', 'started', 'skipped', 'failed')),
  reason TEXT,
  created_at INTEGER NOT NULL,
  settled_at INTEGER,
  PRIMARY KEY (schedule_id, slot_at),
  CHECK ((state IN ('started', 'failed')) = (run_id IS NOT NULL)),
  CHECK ((state = 'pending') = (settled_at IS NULL))
) WITHOUT ROWID;
CREATE INDEX schedule_firings_pending ON schedule_firings (created_at) WHERE state = 'pending';

-- A schedule's run that ends lets its oldest held (`queue` overlap) run start, unless another of
-- the schedule's runs is still active: the release commits with the end. One index probe per
-- run that ends (the UNIQUE run_id).
CREATE TRIGGER schedule_queue_release AFTER UPDATE OF state ON runs
WHEN NEW.state <> OLD.state AND NEW.state IN ('completed', 'failed', 'timed_out', 'cancelled') AND
  EXISTS (SELECT 1 FROM schedule_firings WHERE run_id = NEW.run_id)
BEGIN
  UPDATE run_queue SET available_at = NEW.state_changed_at, updated_at = NEW.state_changed_at
  WHERE run_id = (
    SELECT h.run_id FROM schedule_firings f
    JOIN schedule_firings h ON h.schedule_id = f.schedule_id AND h.state = 'started'
    JOIN run_queue hq ON hq.run_id = h.run_id AND hq.state = 'queued' AND
      hq.available_at = 8640000000000000
    WHERE f.run_id = NEW.run_id AND NOT EXISTS (
      SELECT 1 FROM schedule_firings a JOIN runs ar ON ar.run_id = a.run_id
      JOIN run_queue aq ON aq.run_id = a.run_id
      WHERE a.schedule_id = f.schedule_id AND a.run_id <> NEW.run_id AND
        ar.state NOT IN ('completed', 'failed', 'timed_out', 'cancelled') AND
        aq.available_at <> 8640000000000000
    )
    ORDER BY h.slot_at LIMIT 1
  );
END;
