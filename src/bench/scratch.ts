import {randomBytes} from 'node:crypto'

import {completeWriter} from '../complete/completeWriter.js'
import {withDatabase} from '../connection/url.js'
import type {Database} from '../engine/engine.js'
import {postgresEngine, withKnex} from '../engine/postgres/postgresEngine.js'
import {usageError} from '../errors.js'
import {analyzeDatabase, createDatabase, dropDatabase} from '../worlds/admin.js'
import {buildFixtureSchema, holdsRealAirflowSchema, type FixtureVersion} from '../worlds/fixtureSchema.js'
import {seedWorld, type SeedOptions} from '../worlds/seed.js'
import type {AirflowDatabase} from '../store/airflowDatabase.js'
import type {AirflowStore} from '../store/airflowStore.js'
import {requireAirflow} from '../store/schemaCheck.js'

/**
 * Scratch databases for benchmarks: created next to the database the operator named (or the
 * sandbox's), filled with a fixture schema and a seeded world, dropped afterwards. The named
 * database itself is only used to run CREATE/DROP DATABASE, and never if it holds Airflow data.
 */
export interface ScratchServer {
  adminUrl: string
  /** `seed`: the seeded world (seedWorld); `world`: another fixture builder, run in its place. */
  create(options: {
    seed?: SeedOptions
    world?: (trx: Parameters<typeof seedWorld>[0]) => Promise<unknown>
    version?: FixtureVersion
    poolSize?: number
  }): Promise<ScratchDatabase>
  dropAll(): Promise<void>
}

export interface ScratchDatabase {
  name: string
  url: string
  /** The scratch database as airlock sees it: schema checked, store built. */
  airflow: AirflowDatabase<AirflowStore>
  db: Database
  drop(): Promise<void>
}

export async function openScratchServer(adminUrl: string, allowAirflowData = false): Promise<ScratchServer> {
  await withKnex(adminUrl, async (admin) => {
    if ((await holdsRealAirflowSchema(admin)) && !allowAirflowData) {
      throw usageError(
        'The bench database holds a real Airflow schema; airlock bench only creates scratch databases next to a database it may leave alone.',
        [
          'Point --database-url at a maintenance database of a test server (for example …/postgres), or use the sandbox (the default).',
        ],
      )
    }
  })

  const created: ScratchDatabase[] = []
  const prefix = `airlock_bench_${randomBytes(3).toString('hex')}`
  return {
    adminUrl,
    async create({seed, world, version = '3.0', poolSize = 10}) {
      const name = `${prefix}_${created.length}`
      await createDatabase(adminUrl, name)
      const url = withDatabase(adminUrl, name)
      const db = await postgresEngine.open(url, {verb: 'bench', poolSize})
      const {knex} = db
      await buildFixtureSchema(knex, version)
      await knex.transaction((trx) => (world ? world(trx) : seedWorld(trx, seed!)))
      await analyzeDatabase(knex)
      const database: ScratchDatabase = {
        name,
        url,
        db,
        airflow: await requireAirflow(db),
        async drop() {
          await db.close()
          await dropDatabase(adminUrl, name)
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

/** complete's writer as the benchmark runs it: running task instances, their outlets' events, no extra. */
export function benchWriter(scratch: ScratchDatabase, options: {downstream?: boolean} = {}) {
  return completeWriter(scratch.airflow.store, {
    fromStates: ['running'],
    emitEvents: true,
    defaultExtra: '{}',
    endDate: null,
    airlockVersion: 'bench',
    ...(options.downstream === undefined ? {} : {downstream: options.downstream}),
  })
}
