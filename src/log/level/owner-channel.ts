import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { mkdtemp, readFile, rename, rm, chmod, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { OwnerChannelError } from "../../errors/owner-channel-error.js";
import { TurnlogError } from "../../errors/turnlog-error.js";
import { describeThrown, isRecord } from "../../util/json-value.js";
import { newSecretToken, tokensMatch } from "../../util/secret-token.js";

/**
 * The owner channel of a LevelDB log (docs/log.md, "The owner channel"): while a process holds the
 * log, another local process hands it a person's answer to a held call through a Unix domain
 * socket, and the holder records it — nothing writes a LevelDB log behind its owner's back. This
 * module carries requests and replies; what an answer records is the read API's
 * (src/reader/held-call-answer.ts), handed in by whoever owns the log (a runtime, a reader).
 */

/** The file in the log directory that names the socket and holds the token: mode 0600. */
export const ownerFileName = "turnlog-owner.json";

/** A request is one JSON line of at most this many bytes (edited arguments included). */
export const maxRequestBytes = 2 ** 20;
/** A reply (the answer's events as recorded) is read up to this many bytes. */
const maxReplyBytes = 8 * 2 ** 20;
/** A connection that sends nothing for this long is closed: a client that connects and waits holds nothing. */
const idleMs = 10_000;
/** The name of a socket directory, before the six characters mkdtemp adds. */
const socketPrefix = "turnlog-owner-";
/** `sun_path` holds 108 bytes on Linux (104 on macOS), its terminating NUL included. */
const maxSocketPathBytes = 100;

/** An answer to a held call, as the channel carries it: `answer` is checked by the handler. */
export interface OwnerRequest {
  sessionId: string;
  callId: string;
  answer: Record<string, unknown>;
}

/** Records an answer in the owner's process and resolves with what it recorded (JSON). */
export type OwnerHandler = (request: OwnerRequest) => Promise<unknown>;

/** What the owner replied: the answer as recorded, or the refusal (an error's code and message). */
export type OwnerReply = { recorded: unknown } | { refused: { code: string; message: string } };

interface OwnerFile {
  format: 1;
  pid: number;
  socket: string;
  token: string;
}

/** A log that serves an owner channel (`LevelEventLog`): the capability a runtime or a reader hands its answer handler to. */
export interface AnswerChannelHost {
  /**
   * Records the answers that arrive through the log's owner channel with `handler`, until the
   * returned function is called. The handler registered last records; none registered: refused.
   */
  serveAnswers(handler: OwnerHandler): () => void;
}

/** The log's owner channel, when it serves one (`LevelEventLog`); `undefined` otherwise. */
export function answerChannelOf(log: object): AnswerChannelHost | undefined {
  const candidate = log as Partial<AnswerChannelHost>;
  return typeof candidate.serveAnswers === "function" ? (log as AnswerChannelHost) : undefined;
}

/**
 * The owner files and socket directories of the channels this process serves. A process that ends
 * without closing its logs removes them on its way out (`exit`), so a finished host leaves no
 * stale files; one killed outright leaves them, and the next client or owner sees them stale.
 */
const served = new Map<OwnerChannel, { ownerFile: string; socketDirectory: string | undefined }>();
let exitHookInstalled = false;

function removeOnExit(channel: OwnerChannel, files: { ownerFile: string; socketDirectory: string | undefined }): void {
  served.set(channel, files);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const { ownerFile, socketDirectory } of served.values()) {
      try {
        rmSync(ownerFile, { force: true });
        if (socketDirectory !== undefined) rmSync(socketDirectory, { recursive: true, force: true });
      } catch {
        // Leaving: a file that cannot be removed is left stale, which clients detect.
      }
    }
  });
}

/**
 * The serving side: the socket, the owner file and the handlers. Started by `LevelEventLog.open`
 * once the lock is taken, closed by its `close()` before the lock is given back.
 */
export class OwnerChannel {
  readonly #handlers: OwnerHandler[] = [];
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #connections = new Set<net.Socket>();
  /** Connections whose request has not been handed to a handler yet: told "closing" on close. */
  readonly #waiting = new Set<net.Socket>();
  #closed: Promise<void> | undefined;

  private constructor(
    private readonly directory: string,
    private readonly server: net.Server,
    private readonly socketDirectory: string | undefined,
    private readonly token: string,
  ) {}

  /**
   * Listens on a new socket and writes the owner file into `directory` (replacing a stale one,
   * whose socket directory it removes). The caller holds the log's lock.
   */
  static async start(directory: string): Promise<OwnerChannel> {
    await removeStaleSocket(directory);
    const token = newSecretToken();
    let socketDirectory: string | undefined;
    let socketPath: string;
    if (process.platform === "win32") {
      // A named pipe has no file mode: the token alone keeps other processes out (docs/security.md).
      socketPath = `\\\\.\\pipe\\turnlog-owner-${randomBytes(12).toString("hex")}`;
    } else {
      // A directory of its own, mode 0700 (mkdtemp's), so no other uid may even reach the socket.
      socketDirectory = await mkdtemp(path.join(socketBase(), socketPrefix));
      socketPath = path.join(socketDirectory, "socket");
    }
    const server = net.createServer();
    let channel: OwnerChannel | undefined;
    server.on("connection", (socket) => {
      if (channel === undefined) socket.destroy();
      else channel.#accept(socket);
    });
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(socketPath, () => {
          server.off("error", reject);
          resolve();
        });
      });
      if (socketDirectory !== undefined) await chmod(socketPath, 0o600);
      // Serving answers never keeps a process alive that has nothing else to do.
      server.unref();
      channel = new OwnerChannel(directory, server, socketDirectory, token);
      const owner: OwnerFile = { format: 1, pid: process.pid, socket: socketPath, token };
      const temporary = path.join(directory, `${ownerFileName}.${randomBytes(6).toString("hex")}.tmp`);
      await writeFile(temporary, `${JSON.stringify(owner)}\n`, { mode: 0o600, flag: "wx" });
      await rename(temporary, path.join(directory, ownerFileName));
      removeOnExit(channel, { ownerFile: path.join(directory, ownerFileName), socketDirectory });
      return channel;
    } catch (error) {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (socketDirectory !== undefined) await rm(socketDirectory, { recursive: true, force: true });
      throw error;
    }
  }

  serveAnswers(handler: OwnerHandler): () => void {
    this.#handlers.push(handler);
    return () => {
      const index = this.#handlers.lastIndexOf(handler);
      if (index >= 0) this.#handlers.splice(index, 1);
    };
  }

  /**
   * Stops serving: removes the owner file, lets the requests under way reply, tells the clients
   * whose request it had not taken yet that the log is closing (nothing was recorded: they answer
   * in the log once the lock is free, `answerHeldCall`), and removes the socket.
   */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      served.delete(this);
      await rm(path.join(this.directory, ownerFileName), { force: true }).catch(() => undefined);
      const stopped = new Promise<void>((resolve) => this.server.close(() => resolve()));
      while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
      for (const socket of this.#waiting) socket.end(closingLine);
      this.#waiting.clear();
      await stopped;
      if (this.socketDirectory !== undefined) await rm(this.socketDirectory, { recursive: true, force: true }).catch(() => undefined);
    })();
    return this.#closed;
  }

  #accept(socket: net.Socket): void {
    socket.on("error", () => undefined);
    if (this.#closed !== undefined) {
      socket.end(closingLine);
      return;
    }
    this.#connections.add(socket);
    this.#waiting.add(socket);
    socket.on("close", () => {
      this.#connections.delete(socket);
      this.#waiting.delete(socket);
    });
    socket.setTimeout(idleMs, () => socket.destroy());
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const reply = (answer: OwnerReply) => {
      done = true;
      this.#waiting.delete(socket);
      socket.end(`${JSON.stringify(answer)}\n`);
    };
    socket.on("data", (chunk: Buffer) => {
      if (done) return;
      const newline = chunk.indexOf(0x0a);
      const taken = newline >= 0 ? chunk.subarray(0, newline) : chunk;
      size += taken.length;
      if (size > maxRequestBytes) {
        reply(refusal(`request refused: longer than ${maxRequestBytes} bytes`));
        return;
      }
      chunks.push(taken);
      if (newline < 0) return;
      done = true;
      this.#waiting.delete(socket);
      if (this.#closed !== undefined) {
        socket.end(closingLine);
        return;
      }
      // The owner's append may take a while on a busy disk: only a silent client is timed out.
      socket.setTimeout(0);
      const work = this.#handle(Buffer.concat(chunks).toString("utf8")).then((answer) => {
        socket.end(`${JSON.stringify(answer)}\n`);
      });
      this.#inFlight.add(work);
      void work.finally(() => this.#inFlight.delete(work));
    });
    socket.on("end", () => {
      if (!done) reply(refusal("request refused: no complete line"));
    });
  }

  /** One request: the token first (nothing else is looked at without it), then its shape, then the handler. */
  async #handle(line: string): Promise<OwnerReply> {
    let request: unknown;
    try {
      request = JSON.parse(line);
    } catch {
      return refusal("request refused: not a JSON line");
    }
    if (!isRecord(request) || typeof request.token !== "string" || !tokensMatch(request.token, this.token)) return refusal("request refused: wrong token");
    const { sessionId, callId, answer } = request;
    if (typeof sessionId !== "string" || typeof callId !== "string" || !isRecord(answer)) return refusal("request refused: it needs sessionId, callId and answer");
    const handler = this.#handlers.at(-1);
    if (handler === undefined) return refusal(`the log at ${this.directory} is in use by another process (pid ${process.pid}), which records no answers: it opened the log without a runtime or reader — answer once it is done`);
    try {
      return { recorded: await handler({ sessionId, callId, answer }) };
    } catch (error) {
      if (TurnlogError.isTurnlogError(error)) return { refused: { code: error.code, message: error.message } };
      if (error instanceof TypeError) return refusal(`request refused: ${error.message}`);
      return refusal(`the owner could not record the answer: ${describeThrown(error)}`);
    }
  }
}

/** What a closing owner says to a request it did not take: nothing was recorded, its lock is about to be free. */
const closingLine = `${JSON.stringify({ closing: true })}\n`;

function refusal(message: string): OwnerReply {
  return { refused: { code: "TURNLOG_OWNER_CHANNEL", message } };
}

/** Where socket directories are made: the system's temporary directory, or /tmp when its path is too long for a socket. */
function socketBase(): string {
  const base = tmpdir();
  // mkdtemp adds six characters to the prefix.
  return Buffer.byteLength(path.join(base, `${socketPrefix}abcdef`, "socket")) <= maxSocketPathBytes ? base : "/tmp";
}

/** The socket directory a stale owner file names, removed: only one this module made (named `turnlog-owner-` and six characters by mkdtemp). */
async function removeStaleSocket(directory: string): Promise<void> {
  const stale = await readOwnerFile(directory).catch(() => undefined);
  if (stale === undefined) return;
  const socketDirectory = path.dirname(stale.socket);
  if (path.basename(stale.socket) === "socket" && /^turnlog-owner-[A-Za-z0-9]{6}$/.test(path.basename(socketDirectory))) {
    await rm(socketDirectory, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** The owner file of `directory`, or `undefined` when there is none or it is not one. Throws when it cannot be read (another user's). */
async function readOwnerFile(directory: string): Promise<OwnerFile | undefined> {
  let text: string;
  try {
    text = await readFile(path.join(directory, ownerFileName), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(parsed) || parsed.format !== 1 || !Number.isSafeInteger(parsed.pid) || typeof parsed.socket !== "string" || typeof parsed.token !== "string") return undefined;
  return parsed as unknown as OwnerFile;
}

/** Whether a process with this ID is running (one of another user counts). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Hands `request` to the process that holds the LevelDB log in `directory`, and resolves with its
 * reply; `undefined` when no live process serves a channel there (no owner file, or a stale one:
 * its process is gone or its socket refuses connections) or its process is closing the log. Throws `OwnerChannelError` when the
 * owner cannot be reached for another reason — its owner file or socket belongs to another user —
 * or the connection ends without a reply.
 *
 * @example
 * const reply = await askOwner(".turnlog", { sessionId: "s1", callId: "c1", answer: { decision: "deny", by: "ana" } });
 */
export async function askOwner(directory: string, request: OwnerRequest): Promise<OwnerReply | undefined> {
  let owner: OwnerFile | undefined;
  try {
    owner = await readOwnerFile(directory);
  } catch (error) {
    throw new OwnerChannelError(`cannot read the owner file of the log at ${directory}: ${describeThrown(error)} — answer as the user that owns the log`, { cause: error });
  }
  if (owner === undefined || !processAlive(owner.pid)) return undefined;
  const line = `${JSON.stringify({ token: owner.token, ...request })}\n`;
  if (Buffer.byteLength(line) > maxRequestBytes) throw new TypeError(`an answer sent to the log's owner is at most ${maxRequestBytes} bytes`);
  const socketPath = owner.socket;
  return new Promise<OwnerReply | undefined>((resolve, reject) => {
    const socket = net.createConnection(socketPath);
    const chunks: Buffer[] = [];
    let size = 0;
    let connected = false;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      outcome();
    };
    socket.on("connect", () => {
      connected = true;
      socket.write(line);
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      // A socket nobody listens on: the owner file is stale (its process died without closing).
      if (!connected && (error.code === "ENOENT" || error.code === "ECONNREFUSED")) return settle(() => resolve(undefined));
      settle(() => reject(new OwnerChannelError(`cannot reach the process holding the log at ${directory} (pid ${owner.pid}): ${describeThrown(error)}`, { cause: error })));
    });
    socket.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxReplyBytes) return settle(() => reject(new OwnerChannelError(`the process holding the log at ${directory} replied with more than ${maxReplyBytes} bytes`)));
      chunks.push(chunk);
      const text = Buffer.concat(chunks).toString("utf8");
      const newline = text.indexOf("\n");
      if (newline < 0) return;
      settle(() => {
        const reply = parseReply(text.slice(0, newline));
        // A closing owner took nothing: the caller answers in the log once the lock is free.
        if (reply === "closing") resolve(undefined);
        else if (reply === undefined) reject(new OwnerChannelError(`the process holding the log at ${directory} replied with something that is not a reply`));
        else resolve(reply);
      });
    });
    socket.on("close", () => {
      settle(() => reject(new OwnerChannelError(`the process holding the log at ${directory} (pid ${owner.pid}) closed the connection without a reply — look at the session before answering again`)));
    });
  });
}

function parseReply(line: string): OwnerReply | "closing" | undefined {
  let reply: unknown;
  try {
    reply = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!isRecord(reply)) return undefined;
  if (reply.closing === true) return "closing";
  if ("recorded" in reply) return { recorded: reply.recorded };
  const refused = reply.refused;
  if (isRecord(refused) && typeof refused.code === "string" && typeof refused.message === "string") return { refused: { code: refused.code, message: refused.message } };
  return undefined;
}
