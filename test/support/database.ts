import {randomBytes} from 'node:crypto'

import knexFactory, {type Knex} from 'knex'
import {inject} from 'vitest'

import type {FixtureVersion} from '../../src/worlds/fixtureSchema.js'
import {templateName, withDatabase} from './urls.js'

export interface TestDatabase {
  name: string
  url: string
  knex: Knex
  drop(): Promise<void>
}

/** A connection to the server's admin database (for what a test cannot do from inside its own). */
export function admin(): Knex {
  return knexFactory({client: 'pg', connection: inject('adminUrl'), pool: {min: 0, max: 1}})
}

/**
 * A fresh database for one test file: a clone of the fixture template of `version`, or empty
 * (`'empty'`) for non-Airflow and dump-restore cases.
 */
export async function createTestDatabase(version: FixtureVersion | 'empty', poolSize = 4): Promise<TestDatabase> {
  return createDatabase(version === 'empty' ? undefined : templateName(inject('runId'), version), poolSize)
}

/** A fresh database of this run, empty or a copy of the database `template` names, with its own pool. */
export async function createDatabase(template: string | undefined, poolSize = 4): Promise<TestDatabase> {
  const name = `airlock_t${inject('runId')}_${randomBytes(4).toString('hex')}`
  const root = admin()
  try {
    if (template === undefined) await root.raw('create database ??', [name])
    else await root.raw('create database ?? template ??', [name, template])
  } finally {
    await root.destroy()
  }

  const url = withDatabase(inject('adminUrl'), name)
  const knex = knexFactory({client: 'pg', connection: url, pool: {min: 0, max: poolSize}})
  return {
    name,
    url,
    knex,
    async drop() {
      await knex.destroy()
      const again = admin()
      try {
        await again.raw('drop database if exists ?? with (force)', [name])
      } finally {
        await again.destroy()
      }
    },
  }
}
