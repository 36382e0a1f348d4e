import { testWorkflow } from "../../src/testing/index.ts";
const t0 = performance.now();
try {
  const r = await testWorkflow(process.argv[2], {
    input: JSON.parse(process.argv[3] ?? "null"),
    crash: "every-boundary",
  });
  console.log(r.state, JSON.stringify(r.output), (performance.now() - t0) | 0, r.crash!.ms);
  for (const b of r.crash!.boundaries) {
    console.log(b.boundary, b.outcome, b.state, b.differences.join("; "));
  }
} catch (e) {
  console.log(String(e), (performance.now() - t0) | 0);
}
