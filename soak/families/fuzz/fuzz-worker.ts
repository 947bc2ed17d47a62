import { parentPort, workerData } from "node:worker_threads";
import { runFuzzCases } from "./fuzz-cases.js";

/**
 * A worker thread of the fuzz family: runs every `workers`-th case index from `first`, posting
 * `{ progress }` every thousand cases and `{ tally }` at the end.
 */
interface FuzzWorkerData {
  seed: number;
  count: number;
  first: number;
  workers: number;
}

const { seed, count, first, workers } = workerData as FuzzWorkerData;

function* indices(): Generator<number> {
  for (let index = first; index < count; index += workers) yield index;
}

const tally = await runFuzzCases({ seed, indices: indices(), onProgress: (done) => parentPort?.postMessage({ progress: done }) });
parentPort?.postMessage({ tally });
