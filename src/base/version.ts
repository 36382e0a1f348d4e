/** The package version (kept equal to package.json by test/base/version.test.ts; it lives on the ground floor, base/, so every layer may read it). */
export const VERSION = "0.13.0-alpha.0";
