import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {fixtureVersions} from '../../src/fixtures/fixtureSchema.js'
import {envelope, runCli} from '../support/cli.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {dumpAvailable, restoreDump} from '../support/restoreDump.js'

const expectedVersion = {'3.0': '3.0.0', '3.1': '3.1.0–3.1.7', '3.2': '3.2.x', '3.4': '3.4.0 (unreleased)'} as const

describe('airlock doctor', () => {
  const databases: TestDatabase[] = []
  afterAll(async () => {
    for (const database of databases) await database.drop()
  })

  for (const version of fixtureVersions) {
    it(`recognises the ${version} fixture and its capabilities`, async () => {
      const database = await createTestDatabase(version, 1)
      databases.push(database)
      const result = await runCli(['doctor', '--database-url', database.url, '--json'])
      const out = envelope(result) as {
        status: number
        result: {airflow: {version: string; supported: boolean; capabilities: Record<string, unknown>}; verdict: string}
      }
      expect(result.code).toBe(0)
      expect(out.status).toBe(0)
      expect(out.result.airflow.supported).toBe(true)
      expect(out.result.airflow.version).toBe(expectedVersion[version])
      expect(out.result.airflow.capabilities.eventPartitionKey).toBe(version === '3.2' || version === '3.4')
      expect(out.result.airflow.capabilities.queueShape).toBe(version === '3.4' ? 'per_event' : 'per_asset')
      expect(out.result.verdict).toMatch(/^ready: /)
    })
  }

  it('refuses a head that claims a version its tables do not have (exit 8)', async () => {
    const database = await createTestDatabase('3.0', 1)
    databases.push(database)
    await database.knex('alembic_version').update({version_num: '1d6611b6ab7c'})
    const result = await runCli(['doctor', '--database-url', database.url, '--json'])
    const out = envelope(result) as {status: number; result: {verdict: string}}
    expect(result.code).toBe(8)
    expect(out.result.verdict).toContain('eventPartitionKey')
  })

  it('refuses an unknown alembic head (exit 8) and names it', async () => {
    const database = await createTestDatabase('3.0', 1)
    databases.push(database)
    await database.knex('alembic_version').update({version_num: 'deadbeef0000'})
    const result = await runCli(['doctor', '--database-url', database.url])
    expect(result.code).toBe(8)
    expect(result.stdout).toContain('deadbeef0000')
  })

  it('reports a plain non-Airflow database as unsupported (exit 8) with what is missing', async () => {
    const database = await createTestDatabase('empty', 1)
    databases.push(database)
    const result = await runCli(['doctor', '--database-url', database.url, '--json'])
    const out = envelope(result) as {status: number; result: {airflow: {supported: boolean; missing: string[]}; verdict: string}}
    expect(result.code).toBe(8)
    expect(out.status).toBe(8)
    expect(out.result.airflow.supported).toBe(false)
    expect(out.result.airflow.missing).toContain('table alembic_version')
  })

  it('exits 7 on an unreachable port and never prints the password', async () => {
    const result = await runCli(['doctor', '--database-url', 'postgresql://airflow:Sup3rSecretPw@127.0.0.1:1/airflow', '--json'])
    const out = envelope(result) as {status: number; error: {code: string; message: string}}
    expect(result.code).toBe(7)
    expect(out.status).toBe(7)
    expect(out.error.code).toBe('DATABASE_UNREACHABLE')
    expect(out.error.message).toContain('127.0.0.1:1/airflow')
    expect(result.stdout + result.stderr).not.toContain('Sup3rSecretPw')
  })

  it("reads Airflow's own AIRFLOW__DATABASE__SQL_ALCHEMY_CONN (psycopg2 style) and says so", async () => {
    const database = await createTestDatabase('3.2', 1)
    databases.push(database)
    const sqlalchemy = database.url.replace(/^postgresql:/, 'postgresql+psycopg2:')
    const result = await runCli(['doctor', '--json'], {env: {AIRFLOW__DATABASE__SQL_ALCHEMY_CONN: sqlalchemy}})
    const out = envelope(result) as {result: {connection: {source: string}; airflow: {version: string}}}
    expect(result.code).toBe(0)
    expect(out.result.connection.source).toBe('AIRFLOW__DATABASE__SQL_ALCHEMY_CONN')
    expect(out.result.airflow.version).toBe('3.2.x')
  })

  it('exits 2 with one clear line on an unknown flag, and the error envelope under --json', async () => {
    const human = await runCli(['doctor', '--bogus'])
    expect(human.code).toBe(2)
    expect(human.stdout).toBe('')
    expect(human.stderr.trim().split('\n')).toHaveLength(1)
    expect(human.stderr).toContain('--bogus')
    const json = await runCli(['doctor', '--bogus', '--json'])
    const out = envelope(json) as {status: number; error: {code: string}}
    expect(json.code).toBe(2)
    expect(out).toMatchObject({status: 2, error: {code: 'USAGE'}})
  })

  it('exits 2 when no database is configured, naming the ways to configure one', async () => {
    const result = await runCli(['doctor'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('--database-url')
    expect(result.stderr).toContain('--embedded')
  })
})

const haveDump = await dumpAvailable()

describe.skipIf(!haveDump)('airlock doctor on the restored real Airflow 3.0.0 dump', () => {
  let dump: TestDatabase
  beforeAll(async () => {
    dump = await createTestDatabase('empty', 1)
    await restoreDump(dump.knex)
  })
  afterAll(async () => dump?.drop())

  it('reports Airflow 3.0.0, supported, every privilege granted', async () => {
    const result = await runCli(['doctor', '--database-url', dump.url, '--json'])
    const out = envelope(result) as {status: number; result: {airflow: {version: string; alembicHead: string}; privileges: Array<{granted: boolean}>}}
    expect(result.code).toBe(0)
    expect(out.result.airflow).toMatchObject({version: '3.0.0', alembicHead: '29ce7909c52b'})
    expect(out.result.privileges.every((p) => p.granted)).toBe(true)
  })
})
