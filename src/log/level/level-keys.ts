/**
 * The key layout of a LevelDB log directory. Positions are zero-padded to 16 digits so that
 * LevelDB's byte order is numeric order; stream names are percent-encoded (with `!` encoded too)
 * so that no stream's keys can fall inside another stream's key range.
 *
 * - `g!<global position>`            → the recorded event as JSON text
 * - `s!<stream>!<stream position>`   → its global position, as decimal text
 * - `h!<stream>`                     → the stream head `{ stream, version, hash }` as JSON text
 * - `m!last-global`                  → the last global position, as decimal text
 * - `m!format`                       → the layout version, so a future layout can refuse old data
 * - `m!absent`                       → only in a log `turnlog repair` wrote: the global positions it
 *                                      dropped, as JSON `[[from, to], …]`, so readers know the holes
 */

/** The width of every position in a key. */
export const POSITION_DIGITS = 16;

/** The layout this code writes. */
export const LAYOUT_FORMAT = "turnlog-level-log/1";

/** Holds the last global position, so positions never repeat even if the last event is lost. */
export const LAST_GLOBAL_KEY = "m!last-global";
/** Holds the global positions a repair dropped (see the layout above). */
export const ABSENT_KEY = "m!absent";
/** Holds {@link LAYOUT_FORMAT}. */
export const FORMAT_KEY = "m!format";
/** Prefix of every stream-head key; `listStreams` reads these keys. */
export const HEAD_PREFIX = "h!";
const GLOBAL_PREFIX = "g!";
const STREAM_PREFIX = "s!";

/** A position as fixed-width decimal text, so that byte order is numeric order. */
export function padPosition(position: number): string {
  return String(position).padStart(POSITION_DIGITS, "0");
}

/** A stream name as key text that never contains the `!` separator (`a!b` → `a%21b`). */
export function encodeStreamName(stream: string): string {
  return encodeURIComponent(stream).replaceAll("!", "%21");
}

/** The key of the event at `globalPosition`, e.g. `g!0000000000000007`. */
export function globalKey(globalPosition: number): string {
  return `${GLOBAL_PREFIX}${padPosition(globalPosition)}`;
}

/** The global position of an event key (`g!0000000000000007` → 7). */
export function positionOfGlobalKey(key: string): number {
  return Number(key.slice(GLOBAL_PREFIX.length));
}

/** The prefix of every index key of one stream, e.g. `s!session-1!`. */
export function streamIndexPrefix(stream: string): string {
  return `${STREAM_PREFIX}${encodeStreamName(stream)}!`;
}

/** The index key of one stream position, e.g. `s!session-1!0000000000000003`. */
export function streamIndexKey(stream: string, streamPosition: number): string {
  return `${streamIndexPrefix(stream)}${padPosition(streamPosition)}`;
}

/** The stream position at the end of a stream-index key (NaN if the key is not one). */
export function positionOfIndexKey(key: string): number {
  return Number(key.slice(-POSITION_DIGITS));
}

/** The key of a stream's head, e.g. `h!session-1`. */
export function streamHeadKey(stream: string): string {
  return `${HEAD_PREFIX}${encodeStreamName(stream)}`;
}

/**
 * Bounds that select every key starting with `prefix`. Encoded names and positions are printable
 * ASCII, so DEL (0x7f) sorts after every character that can follow the prefix.
 */
export function prefixRange(prefix: string): { gte: string; lt: string } {
  return { gte: prefix, lt: `${prefix}\x7f` };
}
