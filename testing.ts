/**
 * The test kit for workflow authors, for files that import `@osolmaz/pi-workflows/testing`
 * (see docs/testing.md). The npm package serves its bundle, `dist/testing.mjs`.
 */
export * from "./src/testing/index.ts";
