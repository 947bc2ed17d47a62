import { describe, expect, it } from "vitest";
import { commandEnvironment, runSecrets } from "../../src/cli/run/run-runtime.js";
import type { RunRecord } from "../../src/cli/run/run-record.js";
import { RunPresenter } from "../../src/cli/run/run-presenter.js";
import { createSecretRedactor } from "../../src/policy/secrets/secret-detector.js";

const record: RunRecord = { provider: "openai", baseURL: "http://localhost:11434/v1", model: "m", apiKeyEnv: "LLM_AUTH", mcpServers: [] };

describe("runSecrets: what turnlog run registers as known secrets", () => {
  it("registers the provider key's value, whatever the variable is called, and the MCP servers' secret-named values", () => {
    const mcp = new Map([["github", { GITHUB_TOKEN: "gh-value-0123456789", GITHUB_HOST: "github.example.com" }]]);
    expect(runSecrets(record, { LLM_AUTH: "opaque-key-value-42", PATH: "/usr/bin" }, mcp)).toEqual(["opaque-key-value-42", "gh-value-0123456789"]);
  });

  it("registers nothing for an unset key, and no value too short to be a key", () => {
    expect(runSecrets(record, {}, new Map())).toEqual([]);
    expect(runSecrets(record, { LLM_AUTH: "ollama" }, new Map([["s", { API_TOKEN: "none" }]]))).toEqual([]);
  });
});

describe("the model's streamed text in turnlog run", () => {
  const key = "opaque-key-value-0123456789";
  const pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDx8Vd0Ks0eKFp9u7Gx\n-----END OPENSSH PRIVATE KEY-----\n";
  const shown = (deltas: readonly string[]) => {
    let out = "";
    const redactor = createSecretRedactor({ secrets: [key] });
    const presenter = new RunPresenter({ out: { write: (text: string) => (out += text) }, paint: (_tone, text) => text, live: false, modelLabel: "m", redact: (text) => redactor.redactText(text).text });
    presenter.onEvent({ type: "turn.provider.requested", data: { attempt: 1 } } as never);
    for (const delta of deltas) presenter.onDelta(delta);
    presenter.onEvent({ type: "turn.provider.responded", data: { content: deltas.join("") } } as never);
    return out;
  };

  it("shows a key split across deltas, a private key block and a token as [REDACTED], and everything else as streamed", () => {
    const text = shown(["The key is opaque-key-", "value-01234", "56789 and here is mine:\n", ...pem.match(/[\s\S]{1,7}/g)!, "token ghp_", "0123456789abcdefghijABCDEFGHIJ012345 done"]);
    expect(text).not.toContain(key);
    expect(text).not.toContain("b3BlbnNzaC1rZXktdjE");
    expect(text).not.toContain("ghp_0123456789");
    expect(text).toContain("[REDACTED]");
    expect(text).toContain("assistant › The key is ");
    expect(text).toMatch(/done\n?$/);
  });

  it("benign twin: ordinary text streams through unchanged, line by line", () => {
    expect(shown(["Hello, ", "world.\nSecond ", "line."])).toBe("assistant › Hello, world.\nSecond line.\n");
  });
});

describe("what turnlog run's commands may see of the log's database", () => {
  it("their environment holds no PG* variable, no TURNLOG_LOG or TURNLOG_SCHEMA, and no postgres:// URL under any name", () => {
    const env = {
      PATH: "/usr/bin",
      HOME: "/home/ada",
      PGPASSWORD: "pw",
      PGHOST: "db.internal",
      PGPASSFILE: "/home/ada/.pgpass-work",
      PGUSER: "ada",
      TURNLOG_LOG: "postgres://ada:pw@db.internal/agents",
      TURNLOG_SCHEMA: "team_a",
      DATABASE_URL: "postgresql://ada:pw@db.internal/agents",
      APP_DB: " postgres://db.internal/agents",
      LLM_AUTH: "sk-key",
    };
    expect(commandEnvironment(env, "LLM_AUTH")).toEqual({ PATH: "/usr/bin", HOME: "/home/ada" });
  });

  it("benign twin: other variables, a directory log in TURNLOG_DIR included, pass through", () => {
    expect(commandEnvironment({ PATH: "/usr/bin", LANG: "C.UTF-8", TURNLOG_DIR: "/var/log/agent", POSTGRES_VERSION_NOTE: "16" }, "OPENAI_API_KEY")).toEqual({
      PATH: "/usr/bin",
      LANG: "C.UTF-8",
      TURNLOG_DIR: "/var/log/agent",
      POSTGRES_VERSION_NOTE: "16",
    });
  });
});
