import type { RecordedEvent, SubscribeOptions } from "./event-log.js";

/** Called when a subscriber throws; the append that triggered it has already committed. */
export type ListenerErrorHandler = (error: unknown, event: RecordedEvent) => void;

interface Subscription {
  listener: (event: RecordedEvent) => void;
  stream: string | undefined;
  onEnd: ((error?: unknown) => void) | undefined;
}

/**
 * The live tail of a log: listeners registered with `subscribe`, told about committed events in
 * global order. A throwing listener is reported to `onListenerError` and never reaches the
 * appender, because the events it was told about are already stored.
 */
export class SubscriberRegistry {
  private readonly subscriptions = new Set<Subscription>();

  constructor(private readonly onListenerError: ListenerErrorHandler = () => {}) {}

  /** Adds a listener; the returned function removes it (calling it twice is harmless). */
  add(listener: (event: RecordedEvent) => void, options?: SubscribeOptions): () => void {
    if (typeof listener !== "function") throw new TypeError("subscribe takes a listener function");
    const stream = options?.stream;
    if (stream !== undefined && typeof stream !== "string") throw new TypeError("subscribe's stream must be a string");
    const onEnd = options?.onEnd;
    if (onEnd !== undefined && typeof onEnd !== "function") throw new TypeError("subscribe's onEnd must be a function");
    const subscription: Subscription = { listener, stream, onEnd };
    this.subscriptions.add(subscription);
    return () => {
      this.subscriptions.delete(subscription);
    };
  }

  /** Tells every current listener about `events` (already committed, in global order). */
  notify(events: readonly RecordedEvent[]): void {
    if (this.subscriptions.size === 0 || events.length === 0) return;
    // A listener added while we notify starts with the next append, as "after subscribing" says.
    const current = [...this.subscriptions];
    for (const event of events) {
      for (const subscription of current) {
        if (!this.subscriptions.has(subscription)) continue;
        if (subscription.stream !== undefined && subscription.stream !== event.meta.stream) continue;
        try {
          subscription.listener(event);
        } catch (error) {
          this.reportListenerError(error, event);
        }
      }
    }
  }

  /**
   * Removes every listener, telling each that nothing more will come: `error` when the log
   * stopped after a failed write, nothing when it closed.
   */
  end(error?: unknown): void {
    const ending = [...this.subscriptions];
    this.subscriptions.clear();
    tellEnded(ending, error);
  }

  private reportListenerError(error: unknown, event: RecordedEvent): void {
    try {
      this.onListenerError(error, event);
    } catch {
      // The error handler itself failed; there is nobody left to tell, and the append stands.
    }
  }
}

/**
 * Tells each subscription that nothing more will come (`SubscribeOptions.onEnd`): `error` when
 * the log stopped after a failed write, nothing when it closed. Like a throwing listener, a
 * throwing `onEnd` never reaches whoever closed or broke the log.
 */
export function tellEnded(subscriptions: Iterable<{ onEnd: ((error?: unknown) => void) | undefined }>, error?: unknown): void {
  for (const subscription of subscriptions) {
    try {
      subscription.onEnd?.(error);
    } catch {
      // Nobody is left to tell; the close or the failure stands.
    }
  }
}
