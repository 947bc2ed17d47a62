// The entry of a fuzz worker thread. A worker does not inherit the TypeScript loader of the
// process that started it (`node --import tsx`), so it registers tsx itself before loading the
// worker's TypeScript.
import { register } from "tsx/esm/api";

register();
await import("./fuzz-worker.ts");
