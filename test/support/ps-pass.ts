/**
 * Whether this file runs in the ps pass (`PS_PASS_FILES` in vitest.config.ts: that project sets
 * PI_WORKFLOWS_PROCESS_BACKEND=ps). Crash points of a ps-pass file that make no process-table
 * read the file's other cases do not make (they vary only what was committed, with the same kill
 * and the same recovery) are left out there (`describe.skipIf(inPsPass)`, or a shorter point list)
 * and run under the platform's backend only; a comment names the case that makes their reads.
 */
export const inPsPass = process.env.PI_WORKFLOWS_PROCESS_BACKEND === "ps";
