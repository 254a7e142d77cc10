import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {completeOne} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {countRows, eventsOf, scenario, type World, writeFootprint} from '../support/scenario.js'

describe('complete on Airflow 3.2 (partitions)', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase('3.2')
  })
  afterAll(async () => db?.drop())

  it('an unpartitioned run: events without partition key, consumers queued', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 2})
      .consumer('report', {on: ['etl']})
      .build()
    const target = world.ti('etl')
    const result = await completeOne(db.knex, target.id)
    expect(result.queued).toBe(2)
    expect((await eventsOf(db.knex, target)).map((e) => e.partition_key)).toEqual([null, null])
  })

  it('a partitioned run: events carry its partition_key and do not queue a non-partitioned DAG', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 2})
      .consumer('report', {on: ['etl']})
      .build()
    const target = world.ti('etl')
    await db
      .knex('dag_run')
      .where({id: world.run('etl').id})
      .update({partition_key: 'region=eu'})
    const result = await completeOne(db.knex, target.id)
    expect(result).toMatchObject({result: {outcome: 'completed'}, events: 2, queued: 0})
    expect((await eventsOf(db.knex, target)).map((e) => e.partition_key)).toEqual(['region=eu', 'region=eu'])
    expect(await countRows(db.knex, 'asset_dag_run_queue')).toBe(0)
    expect(result.warnings.join()).toMatch(/partition key region=eu/)
  })

  /**
   * etl.produce with one outlet, consumed by `daily` and by `hourly`, whose timetable is
   * partitioned; with `partitionKey`, etl's run (and so its events) carries that key.
   */
  const partitionedConsumerWorld = async (partitionKey: string | null) => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1})
      .consumer('hourly', {on: ['etl']})
      .consumer('daily', {on: ['etl']})
      .build()
    await db.knex('dag').where({dag_id: 'hourly'}).update({timetable_partitioned: true})
    await db.knex('dag_run').where({dag_id: 'etl'}).update({partition_key: partitionKey})
    return world
  }

  const queuedFor = async (world: World) =>
    (
      await db
        .knex('asset_dag_run_queue')
        .where({asset_id: world.asset('etl.produce.out_1').id})
        .orderBy('target_dag_id')
    ).map((q: {target_dag_id: string}) => q.target_dag_id)

  it('an event with a partition key and a partition-aware consumer: rolled back (unsupported_consumer, naming the DAG), nothing written', async () => {
    const world = await partitionedConsumerWorld('2026-12-01')
    const before = await writeFootprint(db.knex)
    const result = await completeOne(db.knex, world.ti('etl').id)
    expect(result.result).toEqual({
      outcome: 'unsupported_consumer',
      detail: expect.stringContaining('hourly') as string,
    })
    expect(await writeFootprint(db.knex)).toEqual(before)
  })

  it('--allow-unqueued-consumers completes it: the event carries the key, and neither DAG is queued (Airflow queues no DAG without a partitioned timetable for a keyed event)', async () => {
    const world = await partitionedConsumerWorld('2026-12-01')
    const result = await completeOne(db.knex, world.ti('etl').id, {allowUnqueuedConsumers: true})
    expect(result.result).toEqual({outcome: 'completed'})
    expect((await eventsOf(db.knex, world.ti('etl'))).map((e) => e.partition_key)).toEqual(['2026-12-01'])
    expect(await queuedFor(world)).toEqual([])
    expect(result.warnings.join('\n')).toMatch(/queues hourly through their partition mappers/)
    expect(result.warnings.join('\n')).toMatch(/does not queue a DAG without a partitioned timetable .*: daily/)
  })

  it('an event without a partition key: the ordinary consumer is queued, the partition-aware one is not, as in Airflow, and the task instance completes', async () => {
    const world = await partitionedConsumerWorld(null)
    const result = await completeOne(db.knex, world.ti('etl').id)
    expect(result.result).toEqual({outcome: 'completed'})
    expect(await queuedFor(world)).toEqual(['daily'])
    expect(result.warnings.join('\n')).toMatch(
      /does not queue a DAG with a partitioned timetable for an event without a partition key: hourly/,
    )
  })
})

describe('complete on Airflow 3.4 (one queue row per event)', () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase('3.4')
  })
  afterAll(async () => db?.drop())

  it('inserts one queue row per (consumer, event): two completions of the same assets give two rows each', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 2, runs: 2})
      .consumer('report', {on: ['etl.produce.out_1']})
      .consumer('paused', {on: ['etl.produce.out_2'], paused: true})
      .build()
    const first = world.ti('etl', 'produce', {run: 1})
    const second = world.ti('etl', 'produce', {run: 2})
    await completeOne(db.knex, first.id)
    await completeOne(db.knex, second.id)

    const rows = await db
      .knex('asset_dag_run_queue as q')
      .join('asset_event as e', 'e.id', 'q.asset_event_id')
      .select('q.*', 'e.source_run_id')
    const events = await db.knex('asset_event').where({source_dag_id: 'etl', source_task_id: 'produce'})
    expect(events).toHaveLength(4)
    // out_1's consumer gets one row per event; out_2's consumer is paused.
    const out1 = world.asset('etl.produce.out_1')
    const forOut1 = rows.filter((r) => r.asset_id === out1.id)
    expect(forOut1.map((r) => r.target_dag_id)).toEqual(['report', 'report'])
    expect(new Set(forOut1.map((r) => r.source_run_id))).toEqual(new Set([first.run_id, second.run_id]))
    expect(rows).toHaveLength(2)
    for (const row of rows) expect(row.asset_id).toBe(events.find((e) => e.id === row.asset_event_id).asset_id)
  })
})
