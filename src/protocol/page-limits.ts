/**
 * Page sizes of the read operations (run-operations.ts). No dependencies, so the CLI's argument
 * parser can check its options without loading any schema.
 */

/** The most attempts or runs one `run.status` or `run.list` answer asks for. */
export const MAX_PAGE_ITEMS = 1000;
/** The attempts `run.status` answers with when the request names no limit. */
export const DEFAULT_STATUS_ATTEMPTS = 100;
