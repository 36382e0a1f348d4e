/**
 * The words a completion script asks for, one per line as `word<TAB>description`:
 *   workflows   the names `start` finds from here (project `.pi/workflows/`, the agent
 *               directory's `workflows/`, the built-ins); directory listings only, no code runs
 *   runs        short ids of the newest runs (`--active`: unfinished ones), from a host that is
 *               already running; nothing when none is (a completion never starts one)
 * Each is a Node start of its own as the user types (main.ts sends `__complete` here without the
 * command parser), so the client and the protocol's schemas load only for run ids.
 */
import { BUILTIN_WORKFLOW_INFO } from "../base/builtin-workflows.ts";
import { defaultAgentDir, listWorkflowFiles } from "../base/workflow-files.ts";

/** A completion must feel instant: a host that does not answer soon is skipped. */
const HOST_TIMEOUT_MS = 1500;
const MAX_RUNS = 50;

export async function completeWords(
  words: "workflows" | "runs",
  active: boolean,
  env: NodeJS.ProcessEnv,
): Promise<string[]> {
  if (words === "workflows") return workflowNames(env);
  return await runIds(active, env);
}

function workflowNames(env: NodeJS.ProcessEnv): string[] {
  const files = listWorkflowFiles(process.cwd(), defaultAgentDir(env));
  const names = new Set(files.map((file) => file.name));
  return [
    ...files.map((file) => `${file.name}\t${file.origin} workflow`),
    ...BUILTIN_WORKFLOW_INFO.filter((b) => !names.has(b.id)).map((b) =>
      `${b.id}\tbuilt-in: ${b.summary}`
    ),
  ];
}

async function runIds(active: boolean, env: NodeJS.ProcessEnv): Promise<string[]> {
  const [{ connectHost }, { receiptOf }, { clientStateDir, hostSocketPath }, ids, states] =
    await Promise.all([
      import("../client/host-connection.ts"),
      import("../client/command-receipt.ts"),
      import("../client/socket-path.ts"),
      import("./run-ids.ts"),
      import("./run-state.ts"),
    ]);
  let connection;
  try {
    connection = await connectHost(hostSocketPath(clientStateDir(env)), {
      connectTimeoutMs: HOST_TIMEOUT_MS,
    });
  } catch {
    return [];
  }
  try {
    const { runs } = receiptOf(
      "run.list",
      await connection.request("run.list", {
        payload: { all: !active, limit: MAX_RUNS },
        timeoutMs: HOST_TIMEOUT_MS,
      }),
    );
    return runs.map((run) =>
      `${ids.shortRunId(run.runId)}\t${run.workflowName} ${states.describeRunState(run).word}`
    );
  } catch {
    return [];
  } finally {
    connection.close();
  }
}
