import { ConfigError } from "../errors/config-error.js";
import type { SessionLeases } from "../log/event-log.js";
import { sessionStream } from "../core/session-stream.js";
import { recover, type RecoveryDependencies } from "./session-recovery.js";
import type { SessionStore } from "./session-store.js";

/**
 * How a runtime's sessions share their log with other processes (`RuntimeOptions.sessionLease`,
 * docs/embedding.md, "Many hosts, one log"): whether each driving operation holds the session's
 * lease, and whether a call found started and not ended may run again.
 */
export interface SessionLeasePolicy {
  /** The leases each driving operation takes (`"fail"`); undefined when operations race (`"off"`). */
  leases: SessionLeases | undefined;
  /**
   * Whether a call found started and not ended may run again (when idempotent and read-only).
   * Without the lease, a host on a shared log cannot tell a call another host is running from one
   * whose process died: such a call is never run again there.
   */
  rerunInDoubt: boolean;
}

/**
 * The policy a runtime follows on `log`'s leases (`logLeases`: what the log grants, if anything):
 * `"fail"` by default on a log that grants leases, `"off"` on one a single process owns. `"fail"`
 * on a log without leases is the host's mistake, a `ConfigError`.
 *
 * @example
 * const policy = resolveSessionLeasePolicy(options.sessionLease, sessionLeasesOf(log));
 */
export function resolveSessionLeasePolicy(requested: "fail" | "off" | undefined, logLeases: SessionLeases | undefined): SessionLeasePolicy {
  const mode = requested ?? (logLeases !== undefined ? "fail" : "off");
  if (mode === "fail" && logLeases === undefined) {
    throw new ConfigError(['sessionLease: "fail" needs a log that grants leases (PostgresEventLog); this log is owned by one process, so leave it out or pass "off"']);
  }
  return { leases: mode === "fail" ? logLeases : undefined, rerunInDoubt: logLeases === undefined || mode === "fail" };
}

/**
 * Recovers a session being opened, as the policy allows: at once without leases; under the lease,
 * only when it is free — a session whose lease is held is being driven, not crashed, and its next
 * `resume()` under the lease recovers what is left.
 */
export async function recoverOnOpening(store: SessionStore, policy: SessionLeasePolicy, recovery: RecoveryDependencies): Promise<void> {
  const leases = policy.leases;
  if (leases === undefined) {
    await recover(store, recovery);
    return;
  }
  const lease = await leases.tryLease(sessionStream(store.sessionId));
  if (lease === undefined) return;
  try {
    await store.reload();
    await recover(store, recovery);
  } finally {
    await lease.release();
  }
}
