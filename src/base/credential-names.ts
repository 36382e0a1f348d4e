/**
 * Provider credentials of a headless run: the variables Pi reads to reach a model provider (Pi
 * 1.6.0 docs/providers.md and pi-ai's env-key mapping), and any variable whose name looks like a
 * secret. The host keeps them in memory only, per run (never in SQLite, logs, status, events or
 * request fingerprints), and a worker gives them to its Pi child alone. No dependencies, so the
 * CLI's argument parser can use it without loading any schema.
 */
import type { RunEnvironment } from "./env-names.ts";

/** What Pi reads for its providers: keys, tokens and the settings that go with them. */
const PI_PROVIDER_NAMES: ReadonlySet<string> = new Set([
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_OAUTH_TOKEN",
  "ANTHROPIC_AUTH_TOKEN",
  "ANTHROPIC_FEDERATION_RULE_ID",
  "ANTHROPIC_ORGANIZATION_ID",
  "ANTHROPIC_SERVICE_ACCOUNT_ID",
  "ANTHROPIC_IDENTITY_TOKEN_FILE",
  "ANTHROPIC_WORKSPACE_ID",
  "ANT_LING_API_KEY",
  "OPENAI_API_KEY",
  "AZURE_OPENAI_API_KEY",
  "AZURE_OPENAI_BASE_URL",
  "AZURE_OPENAI_RESOURCE_NAME",
  "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
  "AZURE_OPENAI_API_VERSION",
  "DEEPSEEK_API_KEY",
  "NVIDIA_API_KEY",
  "GEMINI_API_KEY",
  "GOOGLE_CLOUD_API_KEY",
  "GOOGLE_CLOUD_PROJECT",
  "GCLOUD_PROJECT",
  "GOOGLE_CLOUD_LOCATION",
  "GOOGLE_APPLICATION_CREDENTIALS",
  "COPILOT_GITHUB_TOKEN",
  "MISTRAL_API_KEY",
  "GROQ_API_KEY",
  "CEREBRAS_API_KEY",
  "XAI_API_KEY",
  "OPENROUTER_API_KEY",
  "AI_GATEWAY_API_KEY",
  "ZAI_API_KEY",
  "ZAI_CODING_CN_API_KEY",
  "OPENCODE_API_KEY",
  "RADIUS_API_KEY",
  "TYPESAFE_API_KEY",
  "HF_TOKEN",
  "FIREWORKS_API_KEY",
  "TOGETHER_API_KEY",
  "BASETEN_API_KEY",
  "KIMI_API_KEY",
  "META_API_KEY",
  "MINIMAX_API_KEY",
  "MINIMAX_CN_API_KEY",
  "MOONSHOT_API_KEY",
  "QWEN_TOKEN_PLAN_API_KEY",
  "QWEN_TOKEN_PLAN_CN_API_KEY",
  "QWEN_TOKEN_PLAN_TEAM_API_KEY",
  "QWEN_TOKEN_PLAN_TEAM_CN_API_KEY",
  "QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY",
  "QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY",
  "XIAOMI_API_KEY",
  "XIAOMI_TOKEN_PLAN_CN_API_KEY",
  "XIAOMI_TOKEN_PLAN_AMS_API_KEY",
  "XIAOMI_TOKEN_PLAN_SGP_API_KEY",
  "CLOUDFLARE_API_KEY",
  "CLOUDFLARE_ACCOUNT_ID",
  "CLOUDFLARE_GATEWAY_ID",
  "AWS_PROFILE",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AWS_BEARER_TOKEN_BEDROCK",
  "AWS_REGION",
  "AWS_DEFAULT_REGION",
  "AWS_WEB_IDENTITY_TOKEN_FILE",
  "AWS_ROLE_ARN",
  "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
  "AWS_CONTAINER_CREDENTIALS_FULL_URI",
  "AWS_CONTAINER_AUTHORIZATION_TOKEN",
]);

/** Names that look like a secret whatever they belong to. */
const SECRET_NAME = /(?:^|_)(?:API_KEY|APIKEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$/i;

/** True for a variable Pi reads for a provider, or one whose name looks like a secret. */
export function isCredentialName(name: string): boolean {
  return PI_PROVIDER_NAMES.has(name) || SECRET_NAME.test(name);
}

/** The provider variables Pi reads that are set in `env` (what a starting client passes on). */
export function providerCredentials(env: Record<string, string | undefined>): RunEnvironment {
  const found: RunEnvironment = {};
  for (const name of PI_PROVIDER_NAMES) {
    const value = env[name];
    if (value !== undefined && value !== "" && !value.includes("\0")) found[name] = value;
  }
  return found;
}

/**
 * Every credential-looking variable of `env`: what a resuming client offers; the host keeps only
 * those the run was started with.
 */
export function credentialVariables(env: Record<string, string | undefined>): RunEnvironment {
  const found: RunEnvironment = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && value !== "" && !value.includes("\0") && isCredentialName(name)) {
      found[name] = value;
    }
  }
  return found;
}

/** Splits `env` into what may be recorded with a run and the credentials that may not. */
export function splitCredentials(
  env: RunEnvironment,
): { env: RunEnvironment; credentials: RunEnvironment } {
  const kept: RunEnvironment = {};
  const credentials: RunEnvironment = {};
  for (const [name, value] of Object.entries(env)) {
    if (isCredentialName(name)) credentials[name] = value;
    else kept[name] = value;
  }
  return { env: kept, credentials };
}
