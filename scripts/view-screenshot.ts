/**
 * Takes the screenshot of `turnlog view` in docs (docs/images/view-demo.png): records the demo
 * session into a temporary log, serves it with the view's own server and the page built from the
 * sources, and photographs the session's page in headless Chromium.
 *
 *   npx tsx scripts/view-screenshot.ts [output.png]   (Chromium: /usr/bin/chromium or $TURNLOG_TEST_CHROMIUM)
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { build } from "tsup";
import { runCli } from "../src/cli/run-cli.js";
import { loadViewAssets } from "../src/cli/view/view-assets.js";
import { startViewServer } from "../src/cli/view/view-server.js";
import { directoryViewSource } from "../src/cli/view/view-source.js";
import { viewBuild } from "../tsup.config.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const output = path.resolve(process.argv[2] ?? path.join(repoRoot, "docs/images/view-demo.png"));
const chromiumPath = process.env.TURNLOG_TEST_CHROMIUM || "/usr/bin/chromium";

const work = await mkdtemp(path.join(os.tmpdir(), "turnlog-view-screenshot-"));
try {
  const logDir = path.join(work, "log");
  let printed = "";
  const io = { stdout: { write: (text: string) => (printed += text) }, stderr: process.stderr, env: { ...process.env, NO_COLOR: "1" } };
  if ((await runCli(["demo", "--dir", logDir], io)) !== 0) throw new Error(`turnlog demo failed:\n${printed}`);
  const sessionId = /session\s+(demo-\S+)/.exec(printed)?.[1];
  if (sessionId === undefined) throw new Error("the demo printed no session ID");

  const viewDir = path.join(work, "view");
  await build({
    ...viewBuild,
    config: false,
    entry: { app: path.join(repoRoot, viewBuild.entry.app) },
    publicDir: path.join(repoRoot, viewBuild.publicDir),
    outDir: viewDir,
    silent: true,
  });
  const source = await directoryViewSource(logDir);
  const server = await startViewServer({ source, assets: await loadViewAssets(viewDir) });
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
    await page.goto(`${server.url}#/session/${sessionId}`);
    await page.locator(".timeline [data-call-id]").first().waitFor();
    await page.locator("[data-field=verdict]").waitFor();
    await page.locator("[data-control=turn]").selectOption("turn-2");
    // The timeline and the turn machine: the page down to the diagram's end.
    const machine = await page.locator("figure.machine").boundingBox();
    const height = Math.ceil((machine?.y ?? 1160) + (machine?.height ?? 0) + 20);
    await page.screenshot({ path: output, clip: { x: 0, y: 0, width: 1280, height }, fullPage: true });
    console.log(`wrote ${path.relative(process.cwd(), output)}`);
  } finally {
    await browser.close();
    await server.close();
    await source.close();
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
