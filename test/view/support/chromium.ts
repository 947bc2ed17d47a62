/**
 * The real headless Chromium the browser tests drive (playwright-core, Debian's `chromium`):
 * `/usr/bin/chromium`, or `$TURNLOG_TEST_CHROMIUM`. Without one, the browser suites say so loudly
 * and are skipped — except under CI (`CI` set), where they run and fail: CI never skips them
 * (`.ci/run` installs the package), as it never skips the PostgreSQL suites.
 */
import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { describe } from "vitest";

export const chromiumPath = process.env.TURNLOG_TEST_CHROMIUM !== undefined && process.env.TURNLOG_TEST_CHROMIUM !== "" ? process.env.TURNLOG_TEST_CHROMIUM : "/usr/bin/chromium";

const inCi = process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false";
const missing = !existsSync(chromiumPath);

if (missing && !inCi) {
  const banner = "!".repeat(78);
  console.warn(`\n${banner}\n!! The browser suites (test/view) did NOT run: no Chromium at ${chromiumPath}.\n!! Install it (Debian: apt-get install chromium) or set TURNLOG_TEST_CHROMIUM.\n${banner}\n`);
}

/** `describe` for a browser suite: skipped without Chromium, unless under CI, where it runs (and fails). */
export const describeWithChromium = missing && !inCi ? describe.skip : describe;

/**
 * Launches headless Chromium with no network of its own (no sync, no component updates, no
 * background requests): Playwright gives each launch a fresh, temporary profile. As root (CI
 * containers) Chromium needs `--no-sandbox`.
 */
export async function launchChromium(): Promise<Browser> {
  if (missing) throw new Error(`CI: no Chromium at ${chromiumPath} (.ci/run installs Debian's chromium, or set TURNLOG_TEST_CHROMIUM); the browser suites must run`);
  return chromium.launch({
    executablePath: chromiumPath,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}
