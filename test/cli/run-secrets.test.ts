import { describe, expect, it } from "vitest";
import { runSecrets } from "../../src/cli/run/run-runtime.js";
import type { RunRecord } from "../../src/cli/run/run-record.js";

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
