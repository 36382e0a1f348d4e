import { describe, expect, test } from "vitest";
import {
  credentialVariables,
  isCredentialName,
  providerCredentials,
  splitCredentials,
} from "../../src/base/credential-names.ts";

describe("credential names", () => {
  test("Pi's provider variables and secret-looking names are credentials; the base is not", () => {
    for (
      const name of [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_PROFILE",
        "HF_TOKEN",
        "GITHUB_TOKEN",
        "MY_SERVICE_SECRET",
        "DB_PASSWORD",
        "GOOGLE_APPLICATION_CREDENTIALS",
      ]
    ) expect(isCredentialName(name), name).toBe(true);
    for (const name of ["PATH", "HOME", "LANG", "PI_CODING_AGENT_DIR", "TOKENIZER", "KEYBOARD"]) {
      expect(isCredentialName(name), name).toBe(false);
    }
  });

  test("a starting client passes Pi's provider variables; a resuming one every credential", () => {
    const env = { OPENAI_API_KEY: "sk", GITHUB_TOKEN: "gh", PATH: "/bin", GROQ_API_KEY: "" };
    expect(providerCredentials(env)).toEqual({ OPENAI_API_KEY: "sk" });
    expect(credentialVariables(env)).toEqual({ OPENAI_API_KEY: "sk", GITHUB_TOKEN: "gh" });
  });

  test("splitCredentials keeps the recordable part apart", () => {
    expect(splitCredentials({ PATH: "/bin", DEPLOY_TOKEN: "t", HOME: "/h" })).toEqual({
      env: { PATH: "/bin", HOME: "/h" },
      credentials: { DEPLOY_TOKEN: "t" },
    });
  });
});
