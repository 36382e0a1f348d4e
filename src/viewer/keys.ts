/** Raw terminal input to key names. One chunk may hold several keys (fast typing, paste). */
export type Key =
  | "up"
  | "down"
  | "left"
  | "right"
  | "enter"
  | "escape"
  | "backspace"
  | "pageUp"
  | "pageDown"
  | "home"
  | "end"
  | "tab"
  | "ctrlC"
  | `char:${string}`;

const SEQUENCES: [string, Key][] = [
  ["\x1b[A", "up"],
  ["\x1bOA", "up"],
  ["\x1b[B", "down"],
  ["\x1bOB", "down"],
  ["\x1b[C", "right"],
  ["\x1bOC", "right"],
  ["\x1b[D", "left"],
  ["\x1bOD", "left"],
  ["\x1b[5~", "pageUp"],
  ["\x1b[6~", "pageDown"],
  ["\x1b[H", "home"],
  ["\x1bOH", "home"],
  ["\x1b[1~", "home"],
  ["\x1b[F", "end"],
  ["\x1bOF", "end"],
  ["\x1b[4~", "end"],
];

export function parseKeys(chunk: string): Key[] {
  const keys: Key[] = [];
  let i = 0;
  outer: while (i < chunk.length) {
    for (const [seq, key] of SEQUENCES) {
      if (chunk.startsWith(seq, i)) {
        keys.push(key);
        i += seq.length;
        continue outer;
      }
    }
    const ch = chunk[i];
    if (ch === "\x1b") {
      // An unknown CSI sequence is skipped whole; a lone ESC is the escape key.
      // deno-lint-ignore no-control-regex -- terminal input is escape sequences
      const csi = /^\x1b\[[0-9;?]*[ -/]*[@-~]/.exec(chunk.slice(i));
      if (csi) {
        i += csi[0].length;
        continue;
      }
      keys.push("escape");
    } else if (ch === "\r" || ch === "\n") keys.push("enter");
    else if (ch === "\x7f" || ch === "\b") keys.push("backspace");
    else if (ch === "\t") keys.push("tab");
    else if (ch === "\x03") keys.push("ctrlC");
    else if (ch >= " ") keys.push(`char:${ch}`);
    i++;
  }
  return keys;
}
