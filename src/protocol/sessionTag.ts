/**
 * The application_name a protocol transaction carries, so audit-locks and pg_stat_activity can
 * name what it works on: `airlock:<verb>:<task instance id>`.
 *
 * PostgreSQL keeps the first 63 bytes of an application_name (NAMEDATALEN - 1) and drops the
 * rest without a word, so the tag carries the id, never the key: `airlock:complete:<id>` is 53
 * bytes, while a key (dag/run/task[map]) is cut as soon as its names are long.
 */
export const applicationNameMaxBytes = 63

const uuid = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
const taggedTaskInstance = new RegExp(`^airlock:([^:]+):(${uuid})$`, 'i')

export interface SessionTag {
  verb: string
  tiId: string
}

/**
 * The tag of a transaction working on task instance `subject` (its id). A subject that is not
 * an id (a key, before the first read finds the row) is kept as it is, and the engine cuts it
 * to 63 bytes: it names the item for a reader of pg_stat_activity, and audit-locks does not
 * take it for a task instance.
 */
export function sessionTag(verb: string, subject: string): string {
  return `airlock:${verb}:${subject}`
}

/** Whether `tag` names task instance `tiId` exactly (else the transaction tags itself again once it knows the id). */
export function tagNames(tag: string, tiId: string): boolean {
  return parseSessionTag(tag)?.tiId === tiId.toLowerCase()
}

/** What an application_name says about a protocol transaction, or null when it is no such tag. */
export function parseSessionTag(applicationName: string): SessionTag | null {
  const match = taggedTaskInstance.exec(applicationName)
  if (!match) return null
  return {verb: match[1]!, tiId: match[2]!.toLowerCase()}
}
