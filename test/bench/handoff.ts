/**
 * `npm run bench -- handoff`: the host side of an interactive step handoff, with a socket client
 * standing in for the Pi extension (the real-Pi figure is `npm run bench -- interaction`). A run
 * loops over one agent step; for each step the client waits for the step (a `session.wait` long
 * poll, then `interaction.claim`), submits the output, and the next step follows. Per step:
 *
 *   verdict_ms   submit sent -> its answer (provisional submission, validation child, verdict)
 *   next_ms      that answer -> the next step claimable (new worker generation, node.started,
 *                interaction.requested, the long poll's wake)
 *   handoff_ms   submit sent -> the next step claimable (the two together)
 *
 * median and p95 over the steps, beside a bare `node -e 0` start measured in the same run, for
 * the host and its children started from source and from the npm bundle, and the bundle once
 * more with no prepared process (`PI_WORKFLOWS_MAX_PREPARED=0`: a validation child and a new
 * worker per step) for the same-run `speedup`. Prints one JSON line.
 *
 *   npm run bench -- handoff [steps=20]
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SessionClient } from "../support/interactive-session.ts";
import { bareNode, benchArgs, bySize, round, stats } from "./_figures.ts";
import { benchBundle } from "./_bundle.ts";

// Smoke: two steps, one handoff between them.
const STEPS = Number(benchArgs[0] ?? bySize(20, 2));
const repo = fileURLToPath(new URL("../..", import.meta.url));

const LOOP = `
import { agent, compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "loop",
  maxSteps: 10000,
  startAt: "ask",
  nodes: {
    ask: agent({
      prompt: ({ state }) => "Step " + state.visit,
      validate: (o) => { if (typeof o?.done !== "boolean") throw new Error("send {done}"); },
    }),
    end: compute({ run: () => "done" }),
  },
  edges: [{ from: "ask", switch: { on: "$.done", cases: { true: "end", false: "ask" } } }],
});
`;

async function measure(
  root: string,
  cliArgs: string[],
  label: string,
  extraEnv: Record<string, string> = {},
) {
  const stateDir = join(root, label, "state");
  const project = join(root, label, "project");
  mkdirSync(join(project, ".pi", "workflows"), { recursive: true });
  writeFileSync(join(project, ".pi", "workflows", "loop.workflow.ts"), LOOP);
  const env = {
    ...process.env,
    PI_WORKFLOWS_STATE_DIR: stateDir,
    PI_CODING_AGENT_DIR: join(root, label, "agent"),
    ...extraEnv,
  };
  const host = spawn(process.execPath, [...cliArgs, "host", "run"], {
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      let err = "";
      const timer = setTimeout(() => reject(new Error(`host not ready: ${err}`)), 30_000);
      host.stderr!.on("data", (d) => {
        err += d;
        if (err.includes("host.ready")) {
          clearTimeout(timer);
          resolve();
        }
      });
      host.on("exit", () => reject(new Error(`host exited: ${err}`)));
    });
    const session = await SessionClient.open(join(stateDir, "host.sock"), `bench-${label}`);
    const started = await session.start("loop", project, {});
    if (started.outcome !== "accepted") throw new Error(JSON.stringify(started));
    const verdict: number[] = [];
    const next: number[] = [];
    let step = await session.nextStep();
    for (let i = 0; i < STEPS; i++) {
      const last = i === STEPS - 1;
      const t0 = performance.now();
      const answer = await session.submit(step, { done: last });
      const t1 = performance.now();
      if ((answer.receipt as { status?: string })?.status !== "accepted") {
        throw new Error(JSON.stringify(answer));
      }
      if (last) break;
      const previous = step.interactionId;
      step = await session.nextStep((s) => s.interactionId !== previous);
      const t2 = performance.now();
      verdict.push(t1 - t0);
      next.push(t2 - t1);
    }
    session.close();
    const handoff = verdict.map((v, i) => v + next[i]);
    return { verdict_ms: stats(verdict), next_ms: stats(next), handoff_ms: stats(handoff) };
  } finally {
    host.kill("SIGTERM");
    await new Promise((resolve) => host.once("exit", resolve));
  }
}

const root = mkdtempSync(join(tmpdir(), "piw-bench-handoff-"));
try {
  const bundle = await benchBundle(join(root, "bundle", "pi-workflows.mjs"));
  const bare: number[] = [];
  for (let i = 0; i < bySize(10, 1); i++) bare.push(await bareNode());
  const source = await measure(root, [join(repo, "src", "cli", "main.ts")], "source");
  const bundled = await measure(root, [bundle], "bundle");
  // The same bundle with no prepared process: a validation child and a new worker per step.
  const fresh = await measure(root, [bundle], "fresh", { PI_WORKFLOWS_MAX_PREPARED: "0" });
  console.log(JSON.stringify({
    bench: "handoff",
    steps: STEPS,
    bare_node_ms: stats(bare),
    source,
    bundle: bundled,
    bundle_fresh: fresh,
    // How much faster a step's handoff is with the run's prepared process (same run, medians).
    speedup: round(fresh.handoff_ms.median / bundled.handoff_ms.median),
  }));
} finally {
  rmSync(root, { recursive: true, force: true });
}
