/**
 * What every airlock write transaction sets first (SET LOCAL, via set_config(…, true) in the
 * protocol's first statement): how long it may wait for a lock, how long a statement may run, and
 * an application_name that lets audit-locks and pg_stat_activity name the task instance.
 */
export interface TransactionLocals {
  lockTimeoutMs: number
  statementTimeoutMs: number
  /** `airlock:<verb>:<ti>`; PostgreSQL keeps at most 63 bytes. */
  applicationName: string
}

export function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8')
  if (bytes.length <= maxBytes) return text
  return bytes.subarray(0, maxBytes).toString('utf8').replace(/\uFFFD$/, '')
}
