/**
 * The built-in workflow definitions, for files that import `@osolmaz/pi-workflows/builtins`
 * (see docs/builtins.md). Inside a running host the loader serves the same objects.
 */
export { echoWorkflow } from "./src/workflows/builtins/echo.ts";
