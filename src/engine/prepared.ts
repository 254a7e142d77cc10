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
  collecting?.push({name: fullName, text})
  return (values) => ({name: fullName, text, values})
}

/** A prepared statement's name and its whole text, as the server receives it. */
export interface PreparedText {
  name: string
  text: string
}

let collecting: PreparedText[] | undefined

/**
 * Every prepared statement `build` defines, in the order it defines them: a store builds all of
 * its statements when it is built, so this is every statement it can prepare (the checked-in
 * statement files are written from it).
 */
export function collectPrepared<T>(build: () => T): {built: T; statements: PreparedText[]} {
  const outer = collecting
  const statements: PreparedText[] = []
  collecting = statements
  try {
    return {built: build(), statements}
  } finally {
    collecting = outer
  }
}

const maxNameBytes = 63

/** A statement that is planned each time it runs (rare or ad-hoc statements). */
export const statement = (text: string, values: readonly unknown[] = []): Statement => ({text, values})
