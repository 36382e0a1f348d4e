/** Names of the assets the build embeds in the single executable and the launcher reads. */

/** The CLI bundle (CommonJS, wrapped in a function taking the module arguments). */
export const APP_ASSET = "pi-workflows.cjs";
/** V8 code cache of APP_ASSET, made by the Node the executable is built from. */
export const CODE_CACHE_ASSET = "pi-workflows.code-cache";
/** The worker mode alone (src/cli/worker-main.ts), wrapped like APP_ASSET. */
export const WORKER_ASSET = "pi-workflows-worker.cjs";
/** V8 code cache of WORKER_ASSET. */
export const WORKER_CODE_CACHE_ASSET = "pi-workflows-worker.code-cache";
/** Set to "1" to have the launcher say on stderr whether V8 accepted the code cache. */
export const CODE_CACHE_CHECK_ENV = "PI_WORKFLOWS_CODE_CACHE_CHECK";
