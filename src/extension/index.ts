/**
 * The pi-workflows Pi extension: a thin client of the workflow host. The factory only registers
 * the `/workflow` command, the `workflow` tool and event handlers; nothing starts until
 * `session_start`, which links this session to the host (starting it on demand), and
 * `session_shutdown` closes that link (idempotently). Workflow code never runs in Pi: the host's
 * worker processes run it. Imports stay within `src/client`, `src/protocol` and this directory.
 */
import type { PiExtensionApi } from "./pi-api.ts";
import { runWorkflowCommand } from "./workflow-command.ts";
import { WorkflowSession } from "./workflow-session.ts";
import { workflowTool } from "./workflow-tool.ts";
import { USAGE } from "./command-args.ts";
import { controllerCommand } from "./controller-command.ts";
import { callsWorkflowSubmit, isAssistantMessage } from "./message-events.ts";

export default function piWorkflows(pi: PiExtensionApi): void {
  let session: WorkflowSession | null = null;

  pi.registerCommand("workflow", {
    description: `Run pi-workflows workflows. ${USAGE.replace(/^Usage: /, "")}`,
    handler: (args, ctx) => runWorkflowCommand(session, args, ctx),
  });
  pi.registerCommand("controller", controllerCommand(() => session));
  pi.registerTool(workflowTool(() => session));

  pi.on("session_start", (_event, ctx) => {
    session?.close();
    session = new WorkflowSession(pi, ctx);
    session.start();
  });
  pi.on("session_shutdown", () => {
    session?.close();
    session = null;
  });
  pi.on("agent_start", () => {
    session?.presenter.noteAgentStart();
  });
  // Pi appends a sent message to the session after its message_end: the next message's start is
  // the first moment its entry id can be read and recorded. The model's reply is waited for: when
  // it submits, the submit carries the entry (one host call, one commit), and a separate record
  // would race it to the host; when it does not, its end records the entry (or the settle does).
  // No turn_end handler: while any extension handles turn_end, Pi builds the whole session context
  // twice at every turn's end (its turn_end boundary), on the path of every tool result to the
  // next request, and nothing here needs that moment.
  const record = () => void session?.presenter.recordSent().catch(() => {});
  pi.on("message_start", (event) => {
    // An assistant message starts once the provider answered Pi's request: a handoff's is out.
    if (isAssistantMessage(event)) session?.handoff.noteAssistantStart();
    else record();
  });
  pi.on("message_end", (event) => {
    session?.presenter.noteMessageEnd(event);
    if (!isAssistantMessage(event)) return;
    if (!callsWorkflowSubmit(event)) record();
    // A turn the outbox started is on the branch by the model's first reply: recorded now.
    if (session?.outbox.hasUnrecorded) void session.syncOutbox().catch(() => {});
  });
  pi.on("agent_settled", (event, ctx) => {
    if (!session) return;
    session.touch(ctx);
    session.handoff.noteSettled();
    void session.settled(event.aborted);
  });
}
