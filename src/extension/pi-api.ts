/**
 * The part of Pi's documented extension API this extension uses, written out structurally so
 * the extension needs no runtime import from Pi (its modules are Pi's to provide) and the
 * typecheck stays small. `test/extension/pi-api-types.test.ts` checks that Pi 1.6.0's real
 * `ExtensionAPI` satisfies these shapes, so a drift in Pi fails the build.
 */

export interface PiSessionEntry {
  type: string;
  id: string;
  /** The entry before it on its branch (null: the root). */
  parentId?: string | null;
  customType?: string;
  details?: unknown;
  /** A `message` entry's message (an assistant message carries its `usage`). */
  message?: unknown;
}

export interface PiSessionManager {
  getSessionId(): string;
  /** The path from the root to the leaf, copied (a long session's holds thousands of entries). */
  getBranch(): PiSessionEntry[];
  getLeafId(): string | null;
  getEntry(id: string): PiSessionEntry | undefined;
}

export interface PiUi {
  notify(message: string, type?: "info" | "warning" | "error"): void;
  setStatus(key: string, text: string | undefined): void;
  setWidget(key: string, content: string[] | undefined): void;
}

export interface PiContext {
  ui: PiUi;
  hasUI: boolean;
  cwd: string;
  sessionManager: PiSessionManager;
  isIdle(): boolean;
  hasPendingMessages(): boolean;
  abort(): void;
}

export interface PiToolResult {
  content: { type: "text"; text: string }[];
  details: unknown;
  isError?: boolean;
}

export interface PiTool {
  name: string;
  label: string;
  description: string;
  promptSnippet?: string;
  parameters: Record<string, unknown>;
  execute(
    toolCallId: string,
    params: Record<string, unknown>,
    signal: AbortSignal | undefined,
    onUpdate: unknown,
    ctx: PiContext,
  ): Promise<PiToolResult>;
}

export interface PiCommand {
  description?: string;
  handler(args: string, ctx: PiContext): Promise<void>;
}

export interface PiCustomMessage {
  customType: string;
  content: string;
  display: boolean;
  details?: unknown;
}

export interface PiSendOptions {
  triggerTurn?: boolean;
  deliverAs?: "steer" | "followUp" | "nextTurn";
}

export interface PiSessionStartEvent {
  reason: string;
}

export interface PiAgentSettledEvent {
  aborted: boolean;
}

export interface PiEvents {
  session_start: PiSessionStartEvent;
  session_shutdown: { reason: string };
  agent_settled: PiAgentSettledEvent;
  agent_start: unknown;
  message_start: unknown;
  /** `{message}`: an assistant message carries `stopReason` (`error` with `errorMessage`). */
  message_end: unknown;
}

export interface PiExtensionApi {
  registerTool(tool: PiTool): void;
  registerCommand(name: string, command: PiCommand): void;
  sendMessage(message: PiCustomMessage, options?: PiSendOptions): void;
  on<K extends keyof PiEvents>(
    event: K,
    handler: (event: PiEvents[K], ctx: PiContext) => void | Promise<void>,
  ): unknown;
}
