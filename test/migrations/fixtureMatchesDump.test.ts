import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {describeTable, publicTables} from '../support/catalog.js'
import {dumpAvailable, restoreDump} from '../support/restoreDump.js'

const haveDump = await dumpAvailable()

describe.skipIf(!haveDump)('fixture 3.0 vs the real Airflow 3.0.0 dump (AIRLOCK_AIRFLOW_DUMP)', () => {
  let dump: TestDatabase
  let fixture: TestDatabase

  beforeAll(async () => {
    dump = await createTestDatabase('empty')
    await restoreDump(dump.knex)
    fixture = await createTestDatabase('3.0')
  })

  afterAll(async () => {
    await dump?.drop()
    await fixture?.drop()
  })

  it('restores the dump with its 45 tables and alembic head', async () => {
    expect(await publicTables(dump.knex)).toHaveLength(45)
    const {rows} = await dump.knex.raw('select version_num from alembic_version')
    expect(rows).toEqual([{version_num: '29ce7909c52b'}])
  })

  it('creates only tables that exist in Airflow 3.0.0', async () => {
    const real = new Set(await publicTables(dump.knex))
    const created = await publicTables(fixture.knex)
    expect(created.length).toBeGreaterThanOrEqual(20)
    expect(created.filter((table) => !real.has(table))).toEqual([])
  })

  it('matches every fixture table column by column, key by key, index by index', async () => {
    for (const table of await publicTables(fixture.knex)) {
      const expected = await describeTable(dump.knex, table)
      const actual = await describeTable(fixture.knex, table)
      expect({table, definition: actual}).toEqual({table, definition: expected})
    }
  })

  it('stamps the same alembic head', async () => {
    const {rows} = await fixture.knex.raw('select version_num from alembic_version')
    expect(rows).toEqual([{version_num: '29ce7909c52b'}])
  })
})

describe.skipIf(haveDump)('fixture 3.0 vs the real Airflow 3.0.0 dump', () => {
  it.skip('skipped: AIRLOCK_AIRFLOW_DUMP does not name a pg_dump of Airflow 3.0.0', () => {})
})
