/**
 * Every test file gets its own config and state directories, so that the seal key, the
 * witnesses and `turnlog run`'s default logs never land in the real home of whoever runs the
 * tests — the in-process CLI and every child process (they inherit `process.env`) included.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll } from "vitest";

const home = mkdtempSync(path.join(tmpdir(), "turnlog-test-home-"));
process.env.XDG_CONFIG_HOME = path.join(home, "config");
process.env.XDG_STATE_HOME = path.join(home, "state");

afterAll(() => {
  rmSync(home, { recursive: true, force: true });
});
