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

/**
 * The three ways a statement is built, all here:
 * - `prepared(name, text)`: a text fixed once per capability set, run as a named prepared
 *   statement (every one of these is in the checked-in statement files);
 * - `statement(text, values)`: a text planned each time it runs (catalog reads, cursor control);
 * - `Params`: a text assembled per call from optional parts (filters), whose `$n` follow the
 *   values added; `Slots` numbers the parameters of a prepared text by the names it first
 *   mentions, for a text whose parts vary by capability set.
 */

/** A statement that is planned each time it runs (rare or ad-hoc statements). */
export const statement = (text: string, values: readonly unknown[] = []): Statement => ({text, values})

/**
 * Bound values for a statement whose text is assembled from optional parts (filters): each value
 * added returns its `$n` placeholder, so numbering can never drift from the values array.
 */
export class Params {
  readonly values: unknown[] = []

  add(value: unknown): string {
    this.values.push(value)
    return `$${this.values.length}`
  }
}

/**
 * Parameters of a prepared text by name: `ref(name, type)` returns `$n::type`, numbered in the
 * order the text first mentions each name (a name the text never mentions takes no number, so
 * PostgreSQL never sees a parameter it cannot type); `values(byName)` orders the values to match.
 */
export class Slots<Name extends string> {
  private readonly order: Name[] = []

  ref(name: Name, type: string): string {
    const index = this.order.includes(name) ? this.order.indexOf(name) : this.order.push(name) - 1
    return `$${index + 1}::${type}`
  }

  values(byName: Readonly<Record<Name, unknown>>): unknown[] {
    return this.order.map((name) => byName[name])
  }
}
