/** The `fetch` shape both official SDKs accept as their `fetch` option. */
export type FetchFunction = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * Watches one streaming request at the byte level. Its `fetch` goes to the SDK client; its
 * `signal` goes with the request. Once the response has started, any stretch of `staleAfterMs`
 * without a byte aborts the request and sets `stale` — so a server that stops sending mid-stream
 * cannot hold a turn forever, while one that sends keep-alive comments or `ping` events (which
 * the SDKs swallow) is rightly seen as alive.
 */
export interface StreamWatchdog {
  readonly fetch: FetchFunction;
  /** Aborted when the stream went stale. */
  readonly signal: AbortSignal;
  /** Whether the watchdog aborted the request. */
  readonly stale: boolean;
  /** Stops the timer; call it once the stream is done with, however it ended. */
  dispose(): void;
}

/**
 * Creates a watchdog for one request. The time until the response's headers is not its business:
 * the SDK's own `timeout` bounds that.
 *
 * @example
 * const watchdog = createStreamWatchdog({ staleAfterMs: 60_000 });
 * const client = new OpenAI({ apiKey, fetch: watchdog.fetch, maxRetries: 0 });
 * try {
 *   const stream = await client.chat.completions.create(body, { signal: AbortSignal.any([signal, watchdog.signal]) });
 *   for await (const chunk of stream) finalizer.push(chunk);
 * } finally {
 *   watchdog.dispose();
 * }
 * if (watchdog.stale) throw new ProviderError({ kind: "timeout", retryable: true });
 */
export function createStreamWatchdog(options: { staleAfterMs: number; onBytes?: (bytes: Uint8Array) => void; fetch?: FetchFunction }): StreamWatchdog {
  const { staleAfterMs, onBytes } = options;
  const baseFetch = options.fetch ?? globalThis.fetch;
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stale = false;
  let disposed = false;

  function disarm(): void {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  }

  function arm(): void {
    disarm();
    if (disposed) return;
    timer = setTimeout(() => {
      stale = true;
      controller.abort(new Error(`no data for ${staleAfterMs} ms`));
    }, staleAfterMs);
    // A forgotten watchdog must not keep a process alive.
    timer.unref?.();
  }

  const fetch: FetchFunction = async (input, init) => {
    const response = await baseFetch(input, init);
    if (response.body === null || disposed) return response;
    arm();
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(bytes, stream) {
          arm();
          onBytes?.(bytes);
          stream.enqueue(bytes);
        },
        flush() {
          disarm();
        },
      }),
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  return {
    fetch,
    signal: controller.signal,
    get stale() {
      return stale;
    },
    dispose() {
      disposed = true;
      disarm();
    },
  };
}
