/**
 * What a headless Pi child loads, with the real Pi and a populated agent dir and project: by
 * default nothing ambient reaches the model (no context file of the agent dir or the project, no
 * skill); a run started with `--project-context` gets Pi's context files and skills, records that
 * choice with the run and shows it in `status`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeModelRequest } from "../support/fake-model.ts";
import { createHeadlessEnv, type HeadlessEnv, oneAgentStep } from "../support/headless-env.ts";

const MARKS = {
  agentDirContext: "AGENT-DIR-CONTEXT-MARK-91",
  projectContext: "PROJECT-CONTEXT-MARK-27",
  skill: "SKILL-DESCRIPTION-MARK-55",
};

describe("what a headless Pi child loads", () => {
  let h: HeadlessEnv;

  beforeAll(async () => {
    h = await createHeadlessEnv();
    const agentDir = h.sandbox.agentDir;
    writeFileSync(join(agentDir, "AGENTS.md"), `# Everywhere\n${MARKS.agentDirContext}\n`);
    writeFileSync(
      join(h.sandbox.project, "AGENTS.md"),
      `# This project\n${MARKS.projectContext}\n`,
    );
    mkdirSync(join(agentDir, "skills", "mark-skill"), { recursive: true });
    writeFileSync(
      join(agentDir, "skills", "mark-skill", "SKILL.md"),
      `---\nname: mark-skill\ndescription: ${MARKS.skill} Use when marking things.\n---\n\nMark it.\n`,
    );
    mkdirSync(join(agentDir, "prompts"), { recursive: true });
    writeFileSync(join(agentDir, "prompts", "mark.md"), "PROMPT-TEMPLATE-MARK\n");
  });
  afterAll(async () => {
    await h?.close();
  });

  const runOnce = async (name: string, extra: string[]) => {
    const path = h.writeWorkflow(`${name}.workflow.ts`, oneAgentStep(name));
    const from = h.model.requests.length;
    const run = await h.cli([
      "start",
      path,
      "--cwd",
      h.sandbox.project,
      ...extra,
      "--wait",
      "--json",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const runId = JSON.parse(run.stdout).run.runId as string;
    const requests = h.model.requests.slice(from);
    expect(requests.length).toBeGreaterThan(0);
    return { runId, requests };
  };
  const everything = (requests: readonly FakeModelRequest[]) =>
    requests.map((r) => JSON.stringify(r.messages)).join("\n");

  it("loads nothing ambient by default", async () => {
    const { runId, requests } = await runOnce("plain", []);
    const text = everything(requests);
    for (const mark of Object.values(MARKS)) expect(text).not.toContain(mark);
    const status = await h.cliJson(["status", runId]);
    expect(status.pi.context).toBe("none");
    expect((await h.cli(["status", runId])).stdout).toContain("pi loads: nothing ambient");
  });

  it("loads context files and skills with --project-context, recorded and shown", async () => {
    const { runId, requests } = await runOnce("context", ["--project-context"]);
    const text = everything(requests);
    expect(text).toContain(MARKS.projectContext);
    expect(text).toContain(MARKS.agentDirContext);
    expect(text).toContain(MARKS.skill);
    const status = await h.cliJson(["status", runId]);
    expect(status.pi.context).toBe("project");
    expect((await h.cli(["status", runId])).stdout).toContain(
      "pi loads: context files and skills (--project-context)",
    );
  });
});
