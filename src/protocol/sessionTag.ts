/**
 * The application_name a protocol transaction carries, so audit-locks and pg_stat_activity can
 * name what it works on: `airlock:<verb>:<task instance id>`, and once the item has waited for
 * the task instance's row lock in earlier transactions, `:w<milliseconds>` after it. Each slice
 * of a lock wait is a transaction of its own (lockWaitSliceMs), so the server's wait start
 * (pg_locks.waitstart) restarts with every slice: only the tag knows how long the item has
 * waited. Milliseconds airlock measured itself: no clock of another host is compared.
 *
 * PostgreSQL keeps the first 63 bytes of an application_name (NAMEDATALEN - 1) and drops the
 * rest without a word, so the tag carries the id, never the key: `airlock:complete:<id>` is 53
 * bytes, which leaves the wait 8 digits (27 hours), while a key (dag/run/task[map]) is cut as
 * soon as its names are long. A wait that does not fit is left out, never the id.
 */
export const applicationNameMaxBytes = 63

const uuid = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
const taggedTaskInstance = new RegExp(`^airlock:([^:]+):(${uuid})(?::w(\\d+))?$`, 'i')

export interface SessionTag {
  verb: string
  tiId: string
  /** How long the item had waited for the row lock before this transaction (0: not before). */
  waitedMs: number
}

/**
 * The tag of a transaction working on task instance `subject` (its id), whose item waited
 * `waitedMs` for the row lock in its earlier transactions. A subject that is not an id (a key,
 * before the first read finds the row) is kept as it is, and the engine cuts it to 63 bytes: it
 * names the item for a reader of pg_stat_activity, and audit-locks does not take it for a task
 * instance.
 */
export function sessionTag(verb: string, subject: string, waitedMs = 0): string {
  const tag = `airlock:${verb}:${subject}`
  const waited = Math.trunc(waitedMs)
  if (waited <= 0 || !parseSessionTag(tag)) return tag
  const withWait = `${tag}:w${waited}`
  return Buffer.byteLength(withWait) <= applicationNameMaxBytes ? withWait : tag
}

/** What an application_name says about a protocol transaction, or null when it is no such tag. */
export function parseSessionTag(applicationName: string): SessionTag | null {
  const match = taggedTaskInstance.exec(applicationName)
  if (!match) return null
  return {verb: match[1]!, tiId: match[2]!.toLowerCase(), waitedMs: match[3] ? Number(match[3]) : 0}
}
