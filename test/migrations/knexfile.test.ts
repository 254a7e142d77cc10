import {execFile} from 'node:child_process'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {promisify} from 'node:util'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {publicTables} from '../support/catalog.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'

/**
 * The repository's knexfile is for scratch fixture databases: `npx knex migrate:latest` through
 * it must refuse a real Airflow database before writing anything, and still build a fixture in
 * an empty one.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const knexCli = path.join(root, 'node_modules', 'knex', 'bin', 'cli.js')

async function knexMigrateLatest(url: string): Promise<{code: number; output: string}> {
  const parsed = new URL(url)
  const env = {
    PATH: process.env.PATH ?? '',
    PGHOST: parsed.hostname,
    PGPORT: parsed.port || '5432',
    PGUSER: decodeURIComponent(parsed.username),
    PGPASSWORD: decodeURIComponent(parsed.password),
    PGDATABASE: decodeURIComponent(parsed.pathname.slice(1)),
  }
  const args = [knexCli, '--knexfile', path.join(root, 'dist', 'knexfile.js'), 'migrate:latest', '--env', 'pgenv']
  try {
    const {stdout, stderr} = await promisify(execFile)(process.execPath, args, {env, cwd: root})
    return {code: 0, output: stdout + stderr}
  } catch (error) {
    const failed = error as {code: number; stdout: string; stderr: string}
    return {code: failed.code, output: failed.stdout + failed.stderr}
  }
}

describe('knexfile', () => {
  let real: TestDatabase
  let scratch: TestDatabase
  beforeAll(async () => {
    ;[real, scratch] = await Promise.all([createTestDatabase('empty', 1), createTestDatabase('empty', 1)])
    // What a real Airflow database looks like to the guard: Airflow's alembic table, no fixture bookkeeping.
    await real.knex.raw('create table alembic_version (version_num varchar(32) primary key)')
    await real.knex('alembic_version').insert({version_num: '29ce7909c52b'})
  })
  afterAll(async () => Promise.all([real?.drop(), scratch?.drop()]))

  it('knex migrate:latest with the pgenv profile refuses a real Airflow database, and writes nothing', async () => {
    const result = await knexMigrateLatest(real.url)
    expect(result.code).not.toBe(0)
    expect(result.output).toContain('refusing to run knex here: this database holds an Airflow schema')
    expect(await publicTables(real.knex)).toEqual(['alembic_version'])
    const schemas = await real
      .knex('information_schema.schemata')
      .where({schema_name: 'airlock_fixture'})
      .pluck('schema_name')
    expect(schemas).toEqual([])
  })

  it('builds the newest fixture schema in an empty scratch database, and is idempotent', async () => {
    expect((await knexMigrateLatest(scratch.url)).code).toBe(0)
    expect(await publicTables(scratch.knex)).toContain('asset_dag_run_queue')
    expect(await scratch.knex('alembic_version').pluck('version_num')).toHaveLength(1)
    const again = await knexMigrateLatest(scratch.url)
    expect(again).toMatchObject({code: 0})
    expect(again.output).toContain('Already up to date')
  })
})
