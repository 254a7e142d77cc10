import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {Executor, Statement} from '../../src/engine/engine.js'
import {postgresStore} from '../../src/store/postgres/postgresStore.js'
import {airflowOf} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario} from '../support/scenario.js'

/**
 * The unlocked read by id resolves the outlets of the task the previous read resolved in its own
 * statement (a batch completes one task of many runs): one round trip instead of two, and the
 * same outlets as the read that resolves them separately, whether the guess was right or not.
 * The world: one DAG whose two tasks declare concrete assets, an inactive one, a name and a uri
 * reference and an alias, over three runs.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.0', 2)
  await scenario(db.knex)
    .producer('etl', {
      tasks: ['a', 'b'],
      outlets: 2,
      inactive: 1,
      runs: 3,
      refs: [{name: 'etl.a.out_1'}, {uri: 's3://nowhere/at/all'}],
      aliases: ['etl_alias'],
    })
    .build()
})
afterAll(async () => db?.drop())

/** An executor that counts the statements it runs and names them. */
function counting(ex: Executor): Executor & {names: string[]} {
  const names: string[] = []
  return {
    names,
    query<Row>(statement: Statement): Promise<Row[]> {
      names.push(statement.name ?? statement.text.slice(0, 40))
      return ex.query<Row>(statement)
    },
  }
}

async function tiIds(task: string): Promise<string[]> {
  const rows = (await db.knex('task_instance').where({dag_id: 'etl', task_id: task}).orderBy('run_id')) as Array<{
    id: string
  }>
  return rows.map((row) => row.id)
}

describe('the unlocked read, guessing the task of the read before it', () => {
  it('resolves the same outlets in one statement when the next task instance is the same task', async () => {
    const airflow = await airflowOf(db.knex)
    const store = postgresStore(airflow.schema.capabilities)
    const [first, second, third] = await tiIds('a')
    const ex = counting(airflow.db.executor)
    const one = await store.readTaskInstance(ex, {tiId: first!}, {withOutlets: true})
    const afterFirst = ex.names.length
    const two = await store.readTaskInstance(ex, {tiId: second!}, {withOutlets: true})
    const guessedStatements = ex.names.slice(afterFirst)
    // A fresh store (no guess) reads the second one with two statements: the reference.
    const fresh = counting(airflow.db.executor)
    const reference = await postgresStore(airflow.schema.capabilities).readTaskInstance(
      fresh,
      {tiId: second!},
      {withOutlets: true},
    )
    expect(two!.outlets).toEqual(reference!.outlets)
    expect(two!.declaredAliases).toEqual(['etl_alias'])
    // Five asset outlets: two active, one inactive, the name reference, the unresolved uri reference.
    expect(two!.outlets.map((o) => [o.kind, o.active, o.assetId === null])).toEqual([
      ['asset', true, false],
      ['asset', true, false],
      ['asset', false, false],
      ['name_ref', true, false],
      ['uri_ref', false, true],
    ])
    expect(guessedStatements.filter((name) => name.includes('resolve_outlets'))).toEqual([])
    expect(guessedStatements.filter((name) => name.includes('read_ti_id_outlets_guessed'))).toHaveLength(1)
    expect(fresh.names.filter((name) => name.includes('resolve_outlets'))).toHaveLength(1)
    // And the first read, with nothing to guess, resolved them on its own.
    expect(one!.outlets).toEqual(
      (await postgresStore(airflow.schema.capabilities).readTaskInstance(fresh, {tiId: first!}, {withOutlets: true}))!
        .outlets,
    )
    expect((await store.readTaskInstance(airflow.db.executor, {tiId: third!}, {withOutlets: true}))!.outlets).toEqual(
      reference!.outlets,
    )
  })

  it('a wrong guess (another task) resolves that task’s own outlets, as without a guess', async () => {
    const airflow = await airflowOf(db.knex)
    const store = postgresStore(airflow.schema.capabilities)
    const [a] = await tiIds('a')
    const [b] = await tiIds('b')
    await store.readTaskInstance(airflow.db.executor, {tiId: a!}, {withOutlets: true})
    const ex = counting(airflow.db.executor)
    const read = await store.readTaskInstance(ex, {tiId: b!}, {withOutlets: true})
    const reference = await postgresStore(airflow.schema.capabilities).readTaskInstance(
      airflow.db.executor,
      {tiId: b!},
      {withOutlets: true},
    )
    expect(read!.outlets).toEqual(reference!.outlets)
    expect(read!.outlets.map((o) => o.name)).toContain('etl.b.out_1')
    expect(read!.outlets.map((o) => o.name)).not.toContain('etl.a.out_2')
    expect(ex.names.filter((name) => name.includes('read_ti_id_outlets_guessed'))).toHaveLength(1)
    expect(ex.names.filter((name) => name.includes('resolve_outlets'))).toHaveLength(1)
  })

  it('an asset made inactive between two reads is read inactive by the guessed read', async () => {
    const airflow = await airflowOf(db.knex)
    const store = postgresStore(airflow.schema.capabilities)
    const [first, second] = await tiIds('a')
    await store.readTaskInstance(airflow.db.executor, {tiId: first!}, {withOutlets: true})
    const active = (await db.knex('asset_active').where({name: 'etl.a.out_2'})) as Array<{name: string; uri: string}>
    expect(active).toHaveLength(1)
    await db.knex('asset_active').where({name: 'etl.a.out_2'}).delete()
    try {
      const read = await store.readTaskInstance(airflow.db.executor, {tiId: second!}, {withOutlets: true})
      expect(read!.outlets.find((o) => o.name === 'etl.a.out_2')!.active).toBe(false)
    } finally {
      await db.knex('asset_active').insert(active)
    }
  })
})
