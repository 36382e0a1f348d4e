/** The package version (kept equal to package.json by test/cli/version.test.ts). */
export const VERSION = "0.13.0-alpha.0";
