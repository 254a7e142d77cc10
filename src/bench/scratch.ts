import {randomBytes} from 'node:crypto'

import knexFactory, {type Knex} from 'knex'

import {usageError} from '../errors.js'
import {buildFixtureSchema, type FixtureVersion} from '../fixtures/fixtureSchema.js'
import {silentKnexLog, withConnection} from '../connection/open.js'
import {withDatabase} from '../connection/url.js'
import {seedWorld, type SeedOptions} from '../sandbox/seed.js'

/**
 * Scratch databases for benchmarks: created next to the database the operator named (or the
 * sandbox's), filled with a fixture schema and a seeded world, dropped afterwards. The named
 * database itself is only used to run CREATE/DROP DATABASE, and never if it holds Airflow data.
 */
export interface ScratchServer {
  adminUrl: string
  create(options: {seed: SeedOptions; version?: FixtureVersion; poolSize?: number}): Promise<ScratchDatabase>
  dropAll(): Promise<void>
}

export interface ScratchDatabase {
  name: string
  url: string
  knex: Knex
  drop(): Promise<void>
}

export async function openScratchServer(adminUrl: string, allowAirflowData = false): Promise<ScratchServer> {
  await withConnection(adminUrl, async (admin) => {
    const {rows} = await admin.raw<{rows: Array<{airflow: string | null; fixture: string | null}>}>(
      `select to_regclass('public.alembic_version')::text as airflow, to_regclass('airlock_fixture.knex_migrations')::text as fixture`,
    )
    if (rows[0]?.airflow && !rows[0].fixture && !allowAirflowData) {
      throw usageError('The bench database holds a real Airflow schema; airlock bench only creates scratch databases next to a database it may leave alone.', [
        'Point --database-url at a maintenance database of a test server (for example …/postgres), or use the sandbox (the default).',
      ])
    }
  })

  const created: ScratchDatabase[] = []
  const prefix = `airlock_bench_${randomBytes(3).toString('hex')}`
  return {
    adminUrl,
    async create({seed, version = '3.0', poolSize = 10}) {
      const name = `${prefix}_${created.length}`
      await withConnection(adminUrl, (k) => k.raw('create database ??', [name]))
      const url = withDatabase(adminUrl, name)
      const knex = knexFactory({client: 'pg', connection: url, pool: {min: 0, max: poolSize}, log: silentKnexLog})
      await buildFixtureSchema(knex, version)
      await knex.transaction((trx) => seedWorld(trx, seed))
      await knex.raw('vacuum analyze')
      const database: ScratchDatabase = {
        name,
        url,
        knex,
        async drop() {
          await knex.destroy()
          await withConnection(adminUrl, (k) => k.raw('drop database if exists ?? with (force)', [name]))
        },
      }
      created.push(database)
      return database
    },
    async dropAll() {
      for (const database of created.splice(0)) await database.drop().catch(() => undefined)
    },
  }
}
