/**
 * The page `turnlog view` serves: entry point of the browser bundle (tsup.config.ts, `viewBuild`).
 * It talks only to its own server (src/cli/view/view-server.ts), and imports nothing but types
 * from the rest of turnlog.
 */
import { render } from "preact";
import { App } from "./app.js";
import "./app.css";

const root = document.getElementById("app");
if (root !== null) {
  // The page's static "loading…" goes: render() adds to what the element holds.
  root.replaceChildren();
  render(<App />, root);
}
