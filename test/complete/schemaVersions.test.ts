import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {completeOne} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {eventsOf, seed, ti} from '../support/scenario.js'

describe('complete on Airflow 3.2 (partitions)', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase('3.2')
    await seed(db.knex)
  })
  afterAll(async () => db?.drop())

  it('an unpartitioned run: events without partition key, consumers queued', async () => {
    const target = await ti(db.knex, 'etl_002', 'task_1')
    const result = await completeOne(db.knex, target.id)
    expect(result.queued).toBeGreaterThan(0)
    expect((await eventsOf(db.knex, target)).map((e) => e.partition_key)).toEqual([null, null])
  })

  it('a partitioned run: events carry its partition_key and do not queue a non-partitioned DAG', async () => {
    const target = await ti(db.knex, 'etl_002', 'task_2')
    await db.knex('dag_run').where({dag_id: 'etl_002', run_id: target.run_id}).update({partition_key: 'region=eu'})
    const before = await db.knex('asset_dag_run_queue').count({n: '*'}).first()
    const result = await completeOne(db.knex, target.id)
    expect(result).toMatchObject({result: {outcome: 'completed'}, events: 2, queued: 0})
    expect((await eventsOf(db.knex, target)).map((e) => e.partition_key)).toEqual(['region=eu', 'region=eu'])
    expect(await db.knex('asset_dag_run_queue').count({n: '*'}).first()).toEqual(before)
    expect(result.warnings.join()).toMatch(/partition key region=eu/)
  })

  it('a partition-aware consumer is refused with a warning, the others are queued', async () => {
    await db.knex('dag').where({dag_id: 'report_001'}).update({timetable_partitioned: true})
    const target = await ti(db.knex, 'etl_001', 'task_1')
    const result = await completeOne(db.knex, target.id)
    const asset = await db.knex('asset').where({name: 'etl_001.task_1.out_1'}).first()
    const queued = await db.knex('asset_dag_run_queue').where({asset_id: asset.id})
    expect(queued.map((q) => q.target_dag_id)).toEqual(['report_002'])
    expect(result.warnings.join()).toMatch(/partitioned timetable.*report_001/)
  })
})

describe('complete on Airflow 3.4 (one queue row per event)', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase('3.4')
    await seed(db.knex)
  })
  afterAll(async () => db?.drop())

  it('inserts one queue row per (consumer, event): two completions of the same assets give two rows each', async () => {
    const first = await ti(db.knex, 'etl_002', 'task_1')
    await completeOne(db.knex, first.id)
    const [run2] = await db.knex('dag_run').where({dag_id: 'etl_002'}).insert({
      dag_id: 'etl_002', run_id: 'manual__2', run_type: 'manual', run_after: new Date(), state: 'running', logical_date: new Date('2000-01-01T00:00:00Z'),
    }).returning('run_id')
    const second = await db.knex('task_instance').insert({
      id: db.knex.raw('gen_random_uuid()'), dag_id: 'etl_002', run_id: run2.run_id, task_id: 'task_1', state: 'running', pool: 'default_pool', pool_slots: 1, try_number: 1, start_date: new Date(),
    }).returning('id')
    await completeOne(db.knex, second[0].id)

    const rows = await db.knex('asset_dag_run_queue as q').join('asset_event as e', 'e.id', 'q.asset_event_id').select('q.*', 'e.source_run_id')
    const events = await db.knex('asset_event').where({source_dag_id: 'etl_002', source_task_id: 'task_1'})
    expect(events).toHaveLength(4)
    // out_1's consumer (report_002) gets one row per event; out_2's consumer (report_003) is paused.
    const out1 = await db.knex('asset').where({name: 'etl_002.task_1.out_1'}).first()
    const forOut1 = rows.filter((r) => r.asset_id === out1.id)
    expect(forOut1.map((r) => r.target_dag_id)).toEqual(['report_002', 'report_002'])
    expect(new Set(forOut1.map((r) => r.source_run_id))).toEqual(new Set([first.run_id, 'manual__2']))
    for (const row of rows) expect(row.asset_id).toBe(events.find((e) => e.id === row.asset_event_id).asset_id)
  })
})
