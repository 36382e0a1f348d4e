/**
 * The built-in workflow definitions, for files that import `@osolmaz/pi-workflows/builtins`
 * (see docs/builtins.md). Inside a running host the loader serves the same objects.
 */
export { autodocWorkflow } from "./src/workflows/builtins/autodoc.ts";
export { autoimplementWorkflow } from "./src/workflows/builtins/autoimplement.ts";
export { autoplanWorkflow } from "./src/workflows/builtins/autoplan.ts";
export { echoWorkflow } from "./src/workflows/builtins/echo.ts";
export { monitorWorkflow } from "./src/workflows/builtins/monitor.ts";
export { planApprovalWorkflow } from "./src/workflows/builtins/plan-approval.ts";
export { sanityCheckWorkflow } from "./src/workflows/builtins/sanity-check.ts";
