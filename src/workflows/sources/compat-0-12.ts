/**
 * The import surface of pi-workflows 0.12.1, as 0.12 workflow and controller files use it
 * (docs/compat-0.12.md is the audit). Two kinds of names need care here; the rest are the same
 * functions under the same names:
 *
 * - Type names. 0.12 loaded files with a transpiler that drops an import used only as a type;
 *   Node's type stripping keeps `import { WorkflowNodeContext } from "..."` (without `type`) and
 *   the link fails. The virtual modules therefore export each 0.12 type name as `undefined`, so
 *   such a file links and the name is only ever used where types are erased.
 * - Names this version does not have (engine, store and loader internals 0.12 exported from its
 *   entry points). Importing one fails the load with a message naming what to use instead.
 */

/** The package entry points a 0.12 workflow or controller file may import. */
export type CompatEntry = "." | "./controllers" | "./builtins";

const HOST_RUNS =
  "the host starts and runs workflows: `pi-workflows start <workflow>`, or `testWorkflow` from `@osolmaz/pi-workflows/testing` in a test";
const DECISION_RECORDS =
  "decisions are records in the host's database: answer with `pi-workflows answer <runId>`, read them with `pi-workflows status <runId> --json`";
const PRESENTATION =
  "return the presentation from a humanDecision's request(ctx): the host checks it when the node runs (limits in docs/authoring.md)";
const PRESENTATION_LIMIT =
  "write the limit as a number: a presentation has at most 256 blocks, 256 items a block, 16,000 characters a string and 64,000 in all (docs/authoring.md); the host checks it when the node runs";
const PRESENTATION_DIGEST =
  "createHash from node:crypto over JSON.stringify(presentation); the host keys a decision by its own digest";
const TRANSPORT_PARTS =
  "nothing: Pi and `pi-workflows status` show a decision whole (no transport parts); drop the limit";
const RUN_RECORDS =
  "runs are rows in the host's database, not bundle files: `pi-workflows status <runId> --json`, `pi-workflows logs <runId>`";
const LOADER =
  'the host finds and loads workflow files: `pi-workflows workflows` lists them; include one by name with includeWorkflow("name")';
const GRAPH =
  "the loader checks and compiles the graph when the file loads: `pi-workflows start` or `pi-workflows test` refuse a bad graph before anything runs";
const CANONICAL = "JSON.stringify, and createHash from node:crypto for a digest";
const SIGNAL =
  "a callback's ctx.signal aborts when the node times out or the run is cancelled: check ctx.signal.aborted";
const PROGRESS =
  "status, view and Pi show a run's progress from its progress updates (publishUpdate with data {schema: PROGRESS_SCHEMA, ...})";
const UPDATES = "publishUpdate checks each update (limits in docs/authoring.md)";
const ARTIFACTS =
  "return the value itself from the node: it is stored whole in the host's database (up to 960 KiB), with no artifact files";
const CONTROLLER_HOST =
  "the host runs controllers: `pi-workflows controller apply|reconcile|get` (docs/controllers.md)";
const CONTROLLER_STORE =
  "controller resources live in the host's database: `pi-workflows controller get <controller> <key>`";
const CONTROLLER_LOADER =
  "put the file in .pi/controllers/ (or ~/.pi/agent/controllers/) and run `pi-workflows controller apply <controller> <key>`: the host finds and loads it";
const CONFLICTS =
  "a conflicting request makes ctx.effects.ensure or ctx.workflows.ensure throw a clear error; the host records a failed reconcile and retries it";

/** 0.12.1 value exports this version does not have, each with what to use instead. */
export const REMOVED_012: Readonly<Record<CompatEntry, Readonly<Record<string, string>>>> = {
  ".": {
    MAX_PRESENTATION_BLOCKS: PRESENTATION_LIMIT,
    MAX_PRESENTATION_CODE_UNITS: PRESENTATION_LIMIT,
    MAX_PRESENTATION_ITEMS: PRESENTATION_LIMIT,
    MAX_PRESENTATION_STRING_CODE_UNITS: PRESENTATION_LIMIT,
    MAX_PRESENTATION_TRANSPORT_PARTS: TRANSPORT_PARTS,
    decisionDocumentSegments: PRESENTATION,
    decisionPresentationDigest: PRESENTATION_DIGEST,
    decisionPresentationFingerprint: PRESENTATION_DIGEST,
    digestCanonical: CANONICAL,
    humanDecisionChannelRequest: DECISION_RECORDS,
    normalizeDecisionPresentation: PRESENTATION,
    valueDecisionPresentation: PRESENTATION,
    validateHumanDecisionRequestIntegrity: PRESENTATION,
    HumanDecisionStore: DECISION_RECORDS,
    canonicalJson: CANONICAL,
    createHumanDecisionAttemptId: DECISION_RECORDS,
    createHumanDecisionRequest: DECISION_RECORDS,
    digest: CANONICAL,
    humanDecisionStateRoot: DECISION_RECORDS,
    validateHumanDecisionResponse: DECISION_RECORDS,
    validateHumanDecisionSubmission: DECISION_RECORDS,
    compileWorkflowDefinition: GRAPH,
    compositionMetadata: GRAPH,
    isCompiledWorkflow: GRAPH,
    WorkflowEngine: HOST_RUNS,
    appendStepContract:
      "write agent({prompt}) with the prompt alone: the host adds the step contract to every agent prompt",
    CancelledError: SIGNAL,
    TimeoutError: SIGNAL,
    extractJsonValue:
      "parseTolerantJson(text), which returns {found, value} (strict JSON, then a fenced block, then the first balanced object or array)",
    parseJsonValue: "parseTolerantJson(text), which returns {found, value}",
    parseStrictJsonValue: "JSON.parse",
    resolveNext: GRAPH,
    resolveNextForOutcome: GRAPH,
    validateWorkflowDefinition: GRAPH,
    discoverWorkflows: LOADER,
    loadWorkflowFile: LOADER,
    resolveWorkflowRef: LOADER,
    resolveWorkflowSource: LOADER,
    workflowFileStem: LOADER,
    workflowSearchDirs: LOADER,
    renderShellCommand: "the ShellResult a shell node's parse receives has command and args",
    runShellAction: "a shell() node, or runCommandBatch inside an action",
    validateCommandBatchRequest:
      "runCommandBatch checks its request and throws a RangeError naming the bad field",
    estimateProgress: PROGRESS,
    formatProgressLine: PROGRESS,
    formatProgressReport: PROGRESS,
    formatRemaining: PROGRESS,
    prioritizeProgressEstimates: PROGRESS,
    progressRecordsFromTrace: PROGRESS,
    progressTracksFromRecords: PROGRESS,
    MAX_CURRENT_UPDATES: UPDATES,
    MAX_UPDATE_DATA_BYTES: UPDATES,
    UPDATE_RATE_BURST: UPDATES,
    UPDATE_RATE_PER_SECOND: UPDATES,
    updateProjection: UPDATES,
    validateProgressData: UPDATES,
    validateWorkflowUpdate: UPDATES,
    sanitizeText: "stripVTControlCharacters from node:util",
    stripAnsi: "stripVTControlCharacters from node:util",
    ARTIFACT_THRESHOLD_BYTES: ARTIFACTS,
    ArtifactWriter: ARTIFACTS,
    decodeValueWith: ARTIFACTS,
    encodeValue: ARTIFACTS,
    isArtifactValue: ARTIFACTS,
    resolveArtifacts: ARTIFACTS,
    DEFINITION_SNAPSHOT_SCHEMA: RUN_RECORDS,
    RUN_BUNDLE_SCHEMA: RUN_RECORDS,
    RUN_STATE_SCHEMA: RUN_RECORDS,
    SESSION_BINDING_SCHEMA: RUN_RECORDS,
    TRACE_EVENT_SCHEMA: RUN_RECORDS,
    WorkflowRunStore: RUN_RECORDS,
    createDefinitionSnapshot: RUN_RECORDS,
    createRunId: RUN_RECORDS,
    listRunBundles: RUN_RECORDS,
    readRunBundle: RUN_RECORDS,
    workflowRunsBaseDir: RUN_RECORDS,
  },
  "./controllers": {
    assertValidControllerDefinition: "defineController, which checks the definition",
    EffectRequestConflictError: CONFLICTS,
    ResourceConflictError: CONFLICTS,
    ResourceNotFoundError: CONTROLLER_STORE,
    WorkflowRequestConflictError: CONFLICTS,
    ControllerEffectService: "ctx.effects.ensure",
    canonicalJson: CANONICAL,
    jsonFingerprint: CANONICAL,
    ControllerManager: CONTROLLER_HOST,
    SqliteControllerStore: CONTROLLER_STORE,
    CONTROLLER_STORE_SCHEMA: CONTROLLER_STORE,
    controllerProjectScope: CONTROLLER_STORE,
    controllerStoreBaseDir: CONTROLLER_STORE,
    controllerStorePath: CONTROLLER_STORE,
    projectControllerStoreBaseDir: CONTROLLER_STORE,
    projectControllerStorePath: CONTROLLER_STORE,
    controllerFileStem: CONTROLLER_LOADER,
    controllerSearchDirs: CONTROLLER_LOADER,
    discoverControllers: CONTROLLER_LOADER,
    loadControllerFile: CONTROLLER_LOADER,
    loadDiscoveredControllers: CONTROLLER_LOADER,
    WorkflowEngineScheduler: "ctx.workflows.ensure",
    ControllerWorkflowCoordinator: "ctx.workflows.ensure",
  },
  "./builtins": {
    planChangeWorkflow:
      "include autoplanWorkflow, autodocWorkflow and planApprovalWorkflow (docs/builtins.md)",
    presentPlan: "a humanDecision request's presentation (docs/authoring.md)",
    parsePlanApprovalPolicy: "planApprovalWorkflow's input checks its policy (docs/builtins.md)",
  },
};

/** 0.12.1 type names per entry: served as `undefined` so an import without `type` links. */
export const TYPE_NAMES_012: Readonly<Record<CompatEntry, readonly string[]>> = {
  ".": (
    "DecisionDefinition DecisionDocumentSegment HumanDecisionAcceptance " +
    "HumanDecisionChoiceDefinition HumanDecisionDefinition HumanDecisionResponseFor " +
    "CompileWorkflowOptions WorkflowCompositionMetadata JsonParseMode DiscoveredWorkflow " +
    "WorkflowSearchPaths CommandBatchItem CommandBatchItemOutcome CommandBatchItemResult " +
    "CommandBatchRequest CommandBatchResult RunCommandBatchOptions ProgressConfidence " +
    "ProgressEstimate ProgressSample ProgressTrackState LoadedRunBundle ReadRunBundleOptions " +
    "AcceptedHumanDecision DefaultedHumanDecision ResolvedHumanDecision AgentNodeDefinition " +
    "AgentStepContract AgentStepExecutor AgentStepPresentation AgentStepRequest " +
    "AgentStepSubmission ActionNodeDefinition ArtifactRef ArtifactValue " +
    "CheckpointNodeDefinition ConversationRange ComputeNodeDefinition " +
    "FunctionActionNodeDefinition DecisionPresentation DecisionPresentationBlock " +
    "DecisionPresentationBullets DecisionPresentationFields DecisionPresentationParagraph " +
    "DecisionPresentationPreformatted DecisionPresentationSection HumanDecisionAnswerSource " +
    "HumanDecisionAudience HumanDecisionCancellationRecord HumanDecisionChannelRequest " +
    "HumanDecisionChoice HumanDecisionChoiceMap HumanDecisionContinuationRecord " +
    "HumanDecisionDeliveryRecord HumanDecisionNodeContract HumanDecisionPrompt " +
    "HumanDecisionReceipt HumanDecisionRequest HumanDecisionResponse " +
    "HumanDecisionSettlementRecord HumanDecisionSubmission HumanDecisionTextInput " +
    "HumanDecisionTimeout HumanDecisionTimeoutPolicy MaybePromise NotifyNodeDefinition " +
    "ShellActionExecution ShellActionNodeDefinition ShellActionResult WorkflowActionContext " +
    "WorkflowActionReceipt WorkflowCompositionSnapshot WorkflowDefinition " +
    "WorkflowDefinitionSnapshot WorkflowEdge WorkflowExitDefinition WorkflowExitMap " +
    "WorkflowExitOutputs WorkflowIncludeDefinition WorkflowIncludedResult WorkflowInputOf " +
    "WorkflowMountedSource WorkflowMountSnapshot WorkflowValueParser WorkflowEngineOptions " +
    "WorkflowNodeCommon WorkflowNodeContext WorkflowNodeDefinition WorkflowNodeOutcome " +
    "WorkflowNodeResult WorkflowNodeSnapshot WorkflowNotificationReceipt " +
    "WorkflowNotificationRequest WorkflowNotificationSink WorkflowPresentationContext " +
    "WorkflowProgressData WorkflowProgressStatus WorkflowRunManifest WorkflowRunResult " +
    "WorkflowRunState WorkflowRunStatus WorkflowSource WorkflowSessionBinding " +
    "WorkflowSessionEntryRecord WorkflowStepRecord WorkflowTraceEvent WorkflowTraceEventDraft " +
    "WorkflowUpdateInput WorkflowUpdateReceipt WorkflowUpdateRecord ShellActionUpdates " +
    "ShellUpdateLine"
  ).split(" "),
  "./controllers": (
    "ControllerManagerOptions RunEventRecord WorkflowNotificationRecord WorkflowRunQueueRecord " +
    "ControllerStore EffectReservation QueueItem QueueRequeueOptions WorkflowRecordUpdate " +
    "WorkflowReservation DiscoveredController ResolvedChildWorkflow " +
    "WorkflowEngineSchedulerOptions ControllerWorkflowScheduler WorkflowSchedulerRequest " +
    "WorkflowSchedulerResult AnyControllerDefinition ChildWorkflowRecord ChildWorkflowReference " +
    "ChildWorkflowRequest ChildWorkflowState ControllerCondition ControllerConditionInput " +
    "ControllerConditionStatus ControllerDefinition ControllerEffects ControllerEvent " +
    "ControllerQueueClaim ControllerResource ControllerResourceRef ControllerResourceStatus " +
    "ControllerStatusPatch ControllerWorkflows EffectApplication EffectDefinition " +
    "EffectObservation EffectRecord EffectState JsonObject JsonPrimitive JsonValue MaybePromise " +
    "ReconcileContext ReconcileResult"
  ).split(" "),
  "./builtins": (
    "AutoplanBlocked AutoplanInput AutoplanReady AutodocBlocked AutodocInput DocumentedPlan " +
    "AutoimplementBlocked AutoimplementCompleted AutoimplementInput ExistingPlanDiscovery " +
    "AutoimplementConcurrency MonitorInput MonitorRepairPolicy PlanChangeBlocked " +
    "PlanChangeInput PlanChangeReady ContributionEvidence SanityCheckArea " +
    "SanityCheckAreaResult SanityCheckEvidence SanityCheckInput SanityCheckMode " +
    "SanityCheckResult SanityCheckReview SanityCheckVerdict PlanApprovalContinue " +
    "PlanApprovalInput PlanApprovalMode PlanApprovalPolicy PlanApprovalReplan " +
    "PlanApprovalResolution PlanApprovalStop ResolvedPlanApprovalPolicy"
  ).split(" "),
};

/** What `@osolmaz/pi-workflows/extension` was in 0.12, and why a file cannot import it. */
export const EXTENSION_ENTRY_MESSAGE =
  "@osolmaz/pi-workflows/extension is the Pi extension: Pi loads it from the installed package (pi install), and workflow and controller files do not import it";

/**
 * The message for a missing named export of a module a workflow file imported, or null when
 * the name is neither a 0.12 name this version dropped nor one it could be confused with.
 */
export function missingExportHint(specifier: string, name: string): string | null {
  const entry = entryOf(specifier);
  if (entry === null) return null;
  const replacement = REMOVED_012[entry][name];
  if (replacement === undefined) return null;
  return `${name} from ${specifier} (pi-workflows 0.12) is not part of this version: ${replacement}`;
}

function entryOf(specifier: string): CompatEntry | null {
  const bare = specifier.replace(/^@osolmaz\//, "");
  if (bare === "pi-workflows") return ".";
  if (bare === "pi-workflows/controllers") return "./controllers";
  if (bare === "pi-workflows/builtins") return "./builtins";
  return null;
}
