import {createHash} from 'node:crypto'

import type {Statement} from './engine.js'

/**
 * A statement that runs prepared: its name is derived once from its text, so two texts never
 * share a name on one connection (a capability set that changes a text changes its name too),
 * and nothing is hashed per call.
 */
export function prepared(name: string, text: string): (values: readonly unknown[]) => Statement {
  // PostgreSQL keeps the first 63 bytes of a name (NAMEDATALEN - 1): the readable part is cut,
  // never the hash that tells two texts apart.
  const hash = createHash('sha1').update(text).digest('hex').slice(0, 12)
  const fullName = `${`airlock_${name}`.slice(0, maxNameBytes - hash.length - 1)}_${hash}`
  return (values) => ({name: fullName, text, values})
}

const maxNameBytes = 63

/** A statement that is planned each time it runs (rare or ad-hoc statements). */
export const statement = (text: string, values: readonly unknown[] = []): Statement => ({text, values})
