/**
 * The credential values a worker holds (what its Pi children and, for the secrets the user
 * named, its nodes got in their environment), and their removal from text the worker keeps or
 * shows: a provider's error may quote the key it refused, and a command may print a token.
 * Values under 8 characters are no key and would only garble the text.
 */
import { isCredentialName } from "../base/credential-names.ts";

export const REDACTED = "[redacted]";

export function secretsOf(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env)
    .filter(([name, value]) => value !== undefined && value.length >= 8 && isCredentialName(name))
    .map(([, value]) => value!);
}

export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join(REDACTED);
  return out;
}

/**
 * Redacts a stream of text that arrives in pieces: a secret split between two pieces is still
 * found, because the end of an unfinished line that could start one is held until the next piece
 * (or `end`).
 */
export function createStreamRedactor(secrets: readonly string[]) {
  const longest = secrets.reduce((max, s) => Math.max(max, s.length), 0);
  // A secret never spans a line end (unless one holds a newline): a whole line goes out at once.
  const lineSafe = !secrets.some((s) => s.includes("\n"));
  let held = "";
  return {
    push(text: string): string {
      if (longest === 0) return text;
      const all = held + text;
      let cut = Math.max(0, all.length - (longest - 1));
      if (lineSafe) cut = Math.max(cut, all.lastIndexOf("\n") + 1);
      // Never cut through a secret that starts before the cut.
      for (const secret of secrets) {
        for (let at = all.indexOf(secret); at !== -1; at = all.indexOf(secret, at + 1)) {
          if (at < cut && at + secret.length > cut) cut = at + secret.length;
        }
      }
      held = all.slice(cut);
      return redact(all.slice(0, cut), secrets);
    },
    end(): string {
      const rest = held;
      held = "";
      return redact(rest, secrets);
    },
  };
}
