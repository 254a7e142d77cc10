import type {Knex} from 'knex'

/**
 * knex's RawBinding type has no room for arrays of numbers or nulls, which node-postgres sends as
 * PostgreSQL arrays (the set-based inserts rely on that). This is the one place that widens it.
 */
export const bindings = (...values: unknown[]): Knex.RawBinding[] => values as Knex.RawBinding[]
