/**
 * The seal invariant (docs/security.md#the-log-and-its-seals): once a stream is sealed, any single-event modification,
 * any single-event deletion and any truncation of it is detected by `verifySealedLog` — whether
 * the hash chain was re-computed afterwards or not, and (for a truncation) whether the seals that
 * covered the removed events went with them or not.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { computeEventHash, type UnhashedEvent } from "../src/log/hash-chain.js";
import type { RecordedEvent } from "../src/log/event-log.js";
import { MemoryEventLog } from "../src/log/memory-event-log.js";
import { generateSealKey } from "../src/log/seal/seal-key.js";
import { sealStreamOf } from "../src/log/seal/seal-record.js";
import { SealWitness } from "../src/log/seal/seal-witness.js";
import { verifySealedLog } from "../src/log/seal/seal-verifier.js";
import { StreamSealer } from "../src/log/seal/stream-sealer.js";

const key = generateSealKey();
let witnessDirectory: string;
beforeAll(async () => {
  witnessDirectory = await mkdtemp(path.join(tmpdir(), "turnlog-seal-property-"));
});
afterAll(async () => {
  await rm(witnessDirectory, { recursive: true, force: true });
});

type Tamper =
  | { kind: "modify"; position: number; rechain: boolean }
  | { kind: "delete"; position: number; rechain: boolean }
  | { kind: "truncate"; keep: number; dropSeals: boolean };

/** Replaces a stream's events in a memory log's storage with `change`'s result, re-chained or as they are. */
function rewriteStream(log: MemoryEventLog, stream: string, change: (events: RecordedEvent[]) => RecordedEvent[], rechain: boolean): void {
  log.unsafeTamper((storage) => {
    const index = storage.streamIndex.get(stream) ?? [];
    const before = index.map((global) => JSON.parse(storage.events[global - 1] ?? "null") as RecordedEvent);
    const after = change(before);
    let prevHash = "";
    const globals: number[] = [];
    for (const [offset, event] of after.entries()) {
      if (rechain) {
        event.meta.streamPosition = offset + 1;
        event.meta.prevHash = prevHash;
        event.meta.hash = computeEventHash(prevHash, event as UnhashedEvent);
      }
      prevHash = event.meta.hash;
      storage.events[event.meta.globalPosition - 1] = JSON.stringify(event);
      globals.push(event.meta.globalPosition);
    }
    storage.streamIndex.set(stream, globals);
    // A re-chaining forger moves the head too; a plain one leaves it.
    if (rechain) storage.heads.set(stream, { version: after.length, hash: prevHash });
  });
}

async function sealedLog(eventCount: number, sealCuts: readonly number[], label: string) {
  const log = new MemoryEventLog();
  const witness = SealWitness.forLogDirectory(path.join(witnessDirectory, label), { directory: witnessDirectory });
  const sealer = new StreamSealer(log, { key, witness });
  const cuts = new Set([...sealCuts.map((cut) => Math.min(cut, eventCount)), eventCount]);
  for (let position = 1; position <= eventCount; position += 1) {
    await log.appendToStream("session-p", [{ type: "turn.step", data: { position, note: `event ${position}` } }]);
    if (cuts.has(position)) await sealer.seal("session-p");
  }
  sealer.dispose();
  return { log, witness };
}

let runs = 0;

describe("seals", () => {
  it("detect any single-event modification, deletion or truncation of a sealed stream, re-chained or not", async () => {
    const scenario = fc
      .record({ eventCount: fc.integer({ min: 1, max: 12 }), sealCuts: fc.array(fc.integer({ min: 1, max: 12 }), { maxLength: 3 }) })
      .chain(({ eventCount, sealCuts }) =>
        fc.record({
          eventCount: fc.constant(eventCount),
          sealCuts: fc.constant(sealCuts),
          tamper: fc.oneof(
            fc.record({ kind: fc.constant("modify" as const), position: fc.integer({ min: 1, max: eventCount }), rechain: fc.boolean() }),
            fc.record({ kind: fc.constant("delete" as const), position: fc.integer({ min: 1, max: eventCount }), rechain: fc.boolean() }),
            fc.record({ kind: fc.constant("truncate" as const), keep: fc.integer({ min: 0, max: eventCount - 1 }), dropSeals: fc.boolean() }),
          ) as fc.Arbitrary<Tamper>,
        }),
      );
    await fc.assert(
      fc.asyncProperty(scenario, async ({ eventCount, sealCuts, tamper }) => {
        runs += 1;
        const { log, witness } = await sealedLog(eventCount, sealCuts, `run-${runs}`);
        expect((await verifySealedLog(log, { keys: [key], witness })).ok).toBe(true);
        if (tamper.kind === "modify") {
          rewriteStream(log, "session-p", (events) => events.map((event) => (event.meta.streamPosition === tamper.position ? { ...event, data: { forged: true } } : event)), tamper.rechain);
        } else if (tamper.kind === "delete") {
          rewriteStream(log, "session-p", (events) => events.filter((event) => event.meta.streamPosition !== tamper.position), tamper.rechain);
        } else {
          rewriteStream(log, "session-p", (events) => events.slice(0, tamper.keep), true);
          if (tamper.dropSeals) {
            rewriteStream(log, sealStreamOf("session-p"), (seals) => seals.filter((seal) => (seal.data as { version: number }).version <= tamper.keep), true);
          }
        }
        const report = await verifySealedLog(log, { keys: [key], witness });
        expect(report.ok).toBe(false);
        expect(report.faults.length).toBeGreaterThan(0);
      }),
      { numRuns: 150 },
    );
  });
});
