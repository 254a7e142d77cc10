import {randomUUID} from 'node:crypto'
import os from 'node:os'

/**
 * Who and where, for the extra of every `log` row airlock writes: Airflow's own rows carry
 * {"host_name": …}; airlock adds the OS user and its command so the audit log says who did it.
 */
export function auditIdentity(): {host_name: string; os_user: string} {
  let user: string
  try {
    user = os.userInfo().username
  } catch {
    user = process.env.USER ?? 'unknown'
  }

  return {host_name: os.hostname(), os_user: user}
}

/**
 * A log row's extra as JSON text around the place its event ids go: `build` gets a stand-in for
 * the ids' array and returns the extra; the statement that inserts the events writes their ids
 * there (store.insertAssetEvents), so the row names exactly the rows written with it. The
 * stand-in is random (once per process), so no other value of the extra can be mistaken for it.
 */
export function extraAroundEventIds(build: (eventIds: unknown) => unknown): {before: string; after: string} {
  const [before, after, ...more] = JSON.stringify(build(standIn)).split(standInJson)
  if (before === undefined || after === undefined || more.length > 0)
    throw new Error('an audit extra names its event ids exactly once')
  return {before, after}
}

const standIn = `event_ids ${randomUUID()}`
const standInJson = JSON.stringify(standIn)

/**
 * Where complete's before-image goes in its audit extra (`airlock.before`): the extra is written
 * with this stand-in, and the statement that inserts the row reads the task instance and puts
 * the image in its place (AuditRow.image); the row version it read is checked under the lock.
 * Random once per process, like the event ids' stand-in.
 */
export const beforeImageStandIn = `before ${randomUUID()}`

/**
 * Where --continue-run's clear image goes inside the before-image: the success statement writes
 * this stand-in as `continue_run`, and the clear's own statement replaces it (store.recordClearImage)
 * by text, as the before-image itself is put in: the extra keeps JSON.stringify's spacing, which
 * the evidence reads (`"airlock":{`).
 */
export const clearImageStandIn = `clear ${randomUUID()}`
