/**
 * Who runs a command that records an operator (an effect verdict, an accepted workflow source):
 * the OS login name of this process, or "unknown" when the system has none for it.
 */
import { userInfo } from "node:os";

export function operatorName(): string {
  try {
    return userInfo().username.slice(0, 200) || "unknown";
  } catch {
    return "unknown";
  }
}
