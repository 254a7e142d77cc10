import {randomUUID} from 'node:crypto'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {completeOne} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {eventsOf, scenario, writeFootprint} from '../support/scenario.js'

/**
 * Which outlets a completion emits events for: the task's declared outlets in the serialized DAG
 * of the task instance's own DAG version, resolved as Airflow's
 * `TaskInstance.register_asset_changes_in_db` resolves them (an asset by name and uri, an
 * `Asset.ref` by name or by uri, among active assets, one event each). Each test states its world.
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.0')
})
afterAll(async () => db?.drop())

const assetNames = async (t: {dag_id: string; run_id: string; task_id: string}) =>
  (await eventsOf(db.knex, t)).map((e) => e.asset_name).sort()

describe('outlets from the serialized DAG', () => {
  it('Asset.ref by name and by uri each emit an event for the asset they name; an asset declared directly and by reference gets two, as in Airflow', async () => {
    const world = await scenario(db.knex)
      .producer('other', {tasks: ['make'], outlets: 2, state: 'success'})
      .producer('etl', {
        outlets: 1,
        refs: [{name: 'other.make.out_1'}, {uri: 's3://lake/other/make/out_2'}, {name: 'etl.produce.out_1'}],
      })
      .build()
    const target = world.ti('etl')
    const result = await completeOne(db.knex, target.id)
    expect(result.result).toEqual({outcome: 'completed'})
    expect(result.events).toBe(4)
    expect(await assetNames(target)).toEqual([
      'etl.produce.out_1',
      'etl.produce.out_1',
      'other.make.out_1',
      'other.make.out_2',
    ])
    expect(result.warnings).toEqual([])
  })

  it('reads a compressed serialized DAG (data_compressed, zlib) the same way', async () => {
    const world = await scenario(db.knex)
      .producer('other', {tasks: ['make'], outlets: 1, state: 'success'})
      .producer('etl', {outlets: 2, refs: [{name: 'other.make.out_1'}], serialized: 'compressed'})
      .build()
    const target = world.ti('etl')
    const result = await completeOne(db.knex, target.id)
    expect(result.events).toBe(3)
    expect(await assetNames(target)).toEqual(['etl.produce.out_1', 'etl.produce.out_2', 'other.make.out_1'])
  })

  it('a reference that names no active asset gets no event and a warning naming it; --strict-outlets refuses the task instance', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1, refs: [{name: 'nowhere'}]})
      .build()
    const target = world.ti('etl')
    const before = await writeFootprint(db.knex)
    const strict = await completeOne(db.knex, target.id, {strictOutlets: true})
    expect(strict.result).toEqual({
      outcome: 'inactive_outlet',
      detail: 'outlet assets not active: Asset.ref(name=nowhere)',
    })
    expect(await writeFootprint(db.knex)).toEqual(before)

    const lenient = await completeOne(db.knex, target.id)
    expect(lenient.result).toEqual({outcome: 'completed'})
    expect(await assetNames(target)).toEqual(['etl.produce.out_1'])
    expect(lenient.warnings.join('\n')).toContain('Asset.ref(name=nowhere) of etl.produce is not active')
  })

  it('without a serialized DAG for the version, falls back to task_outlet_asset_reference with a warning naming the task', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2, serialized: 'none'}).build()
    const target = world.ti('etl')
    const result = await completeOne(db.knex, target.id)
    expect(result.result).toEqual({outcome: 'completed'})
    expect(await assetNames(target)).toEqual(['etl.produce.out_1', 'etl.produce.out_2'])
    expect(result.warnings).toEqual([
      expect.stringMatching(
        /^etl\.produce: no serialized DAG for its DAG version .*task_outlet_asset_reference/,
      ) as string,
    ])
  })

  it("uses the task instance's own DAG version, not the latest parse", async () => {
    const world = await scenario(db.knex)
      .producer('other', {tasks: ['make'], outlets: 1, state: 'success'})
      .producer('etl', {outlets: 1})
      .build()
    const target = world.ti('etl')
    // A newer version of etl whose task now declares other.make.out_1 instead: this run's task
    // instance still belongs to version 1.
    const versionId = randomUUID()
    await db.knex('dag_version').insert({
      id: versionId,
      version_number: 2,
      dag_id: 'etl',
      bundle_name: 'dags-folder',
      created_at: new Date(),
      last_updated: new Date(),
    })
    const newer = {
      __version: 1,
      dag: {
        dag_id: 'etl',
        tasks: [
          {
            __type: 'operator',
            __var: {
              task_id: 'produce',
              outlets: [
                {
                  __type: 'asset',
                  __var: {name: 'other.make.out_1', uri: 's3://lake/other/make/out_1', group: 'asset', extra: {}},
                },
              ],
            },
          },
        ],
      },
    }
    await db.knex('serialized_dag').insert({
      id: randomUUID(),
      dag_id: 'etl',
      data: JSON.stringify(newer),
      created_at: new Date(),
      last_updated: new Date(),
      dag_hash: 'f'.repeat(32),
      dag_version_id: versionId,
    })
    const result = await completeOne(db.knex, target.id)
    expect(result.result).toEqual({outcome: 'completed'})
    expect(await assetNames(target)).toEqual(['etl.produce.out_1'])
  })

  it('a mapped task: every map index uses the one task entry', async () => {
    const world = await scenario(db.knex)
      .producer('other', {tasks: ['make'], outlets: 1, state: 'success'})
      .producer('etl', {outlets: 1, refs: [{uri: 's3://lake/other/make/out_1'}], mapIndexes: [0, 1]})
      .build()
    for (const mapIndex of [0, 1]) {
      const target = world.ti('etl', 'produce', {mapIndex})
      const result = await completeOne(db.knex, target.id)
      expect(result.result).toEqual({outcome: 'completed'})
      expect(result.events).toBe(2)
    }

    const events = await db.knex('asset_event').where({source_dag_id: 'etl'}).orderBy('id').select('source_map_index')
    expect(events.map((e: {source_map_index: number}) => e.source_map_index)).toEqual([0, 0, 1, 1])
  })
})

describe('partition keys the task chose per event (Airflow 3.3+)', () => {
  const keyed = (keys: string[]) => [
    {asset: {name: 'etl.produce.out_1', uri: 's3://lake/etl/produce/out_1'}, extra: {rows: 3}, partitionKeys: keys},
  ]

  it('before 3.3 a line giving them is refused whole: failed, nothing written', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1})
      .consumer('report', {on: ['etl']})
      .build()
    const footprint = await writeFootprint(db.knex)
    const result = await completeOne(db.knex, world.ti('etl').id, {outletEvents: keyed(['us'])})
    expect(result.result).toMatchObject({
      outcome: 'failed',
      message: expect.stringContaining('from 3.3 only') as string,
    })
    expect(await writeFootprint(db.knex)).toEqual(footprint)
  })

  describe('on 3.3', () => {
    let v33: TestDatabase
    beforeAll(async () => {
      v33 = await createTestDatabase('3.3', 2)
    })
    afterAll(async () => v33?.drop())

    it("the downstream preview of an item whose events carry two keys names the consumers of both keys' events", async () => {
      const world = await scenario(v33.knex)
        .producer('etl', {outlets: 2})
        .consumer('first_report', {on: ['etl.produce.out_1']})
        .consumer('second_report', {on: ['etl.produce.out_2']})
        .build()
      await v33.knex('dag_run').update({partition_key: 'run-key'})
      // out_1's event carries "us", out_2's the run's key: two queue statements, and the preview
      // rides in the second, whose own events reach only second_report.
      const result = await completeOne(v33.knex, world.ti('etl').id, {outletEvents: keyed(['us'])})
      expect(result.result).toEqual({outcome: 'completed'})
      const downstream = result.report!.downstream as Array<{dag_id: string}>
      expect(downstream.map((dag) => dag.dag_id)).toEqual(['first_report', 'second_report'])
    })

    it('one event per key with the entry’s extra, the other outlet with the run’s key; keyed events queue no plain consumer', async () => {
      const world = await scenario(v33.knex)
        .producer('etl', {outlets: 2})
        .consumer('report', {on: ['etl']})
        .build()
      await v33.knex('dag_run').update({partition_key: 'run-key'})
      const target = world.ti('etl')
      const result = await completeOne(v33.knex, target.id, {outletEvents: keyed(['us', 'eu'])})
      expect(result.result).toEqual({outcome: 'completed'})
      const events = await eventsOf(v33.knex, target)
      expect(events.map((e) => [e.asset_name, e.partition_key, e.extra])).toEqual([
        ['etl.produce.out_1', 'us', {rows: 3}],
        ['etl.produce.out_1', 'eu', {rows: 3}],
        ['etl.produce.out_2', 'run-key', {}],
      ])
      expect(await countQueue(v33)).toBe(0)
    })

    it('partition keys on an alias emission are refused (Airflow 3.3.1 raises): failed, nothing written', async () => {
      const world = await scenario(v33.knex)
        .producer('etl', {outlets: 1, aliases: ['lake']})
        .build()
      const footprint = await writeFootprint(v33.knex)
      const result = await completeOne(v33.knex, world.ti('etl').id, {
        outletEvents: [{asset: {name: 'x', uri: 's3://x'}, alias: 'lake', partitionKeys: ['us']}],
      })
      expect(result.result).toMatchObject({outcome: 'failed', message: expect.stringContaining('alias lake') as string})
      expect(await writeFootprint(v33.knex)).toEqual(footprint)
    })
  })
})

async function countQueue(database: TestDatabase): Promise<number> {
  return Number(((await database.knex('asset_dag_run_queue').count({n: '*'}).first()) as {n: string}).n)
}

describe('a mapped task downstream expands over the return value', () => {
  it('is refused (mapped_downstream, nothing written) unless --allow-mapped-downstream: airlock writes no task_map row', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {
        tasks: ['extract', 'load', 'report'],
        outlets: 1,
        expandsOver: {load: 'extract'},
        downstream: {extract: ['report']},
      })
      .build()
    const target = world.ti('etl', 'extract')
    const footprint = await writeFootprint(db.knex)
    const refused = await completeOne(db.knex, target.id)
    expect(refused.result).toMatchObject({
      outcome: 'mapped_downstream',
      detail: expect.stringContaining('mapped task load') as string,
    })
    expect(await writeFootprint(db.knex)).toEqual(footprint)

    // The mapped task itself, and a task whose downstream is not mapped, complete as usual.
    expect((await completeOne(db.knex, world.ti('etl', 'report').id)).result).toEqual({outcome: 'completed'})
    expect((await completeOne(db.knex, world.ti('etl', 'load').id)).result).toEqual({outcome: 'completed'})
    const allowed = await completeOne(db.knex, target.id, {allowMappedDownstream: true})
    expect(allowed.result).toEqual({outcome: 'completed'})
  })
})

describe('[state_store] clear_on_success (Airflow 3.3+)', () => {
  let v33: TestDatabase
  beforeAll(async () => {
    v33 = await createTestDatabase('3.3', 2)
  })
  afterAll(async () => v33?.drop())

  it("on: the success deletes the task instance's stored state, and only its own; off (the default): kept", async () => {
    const world = await scenario(v33.knex).producer('etl', {tasks: 2, outlets: 1}).build()
    const [mine, other] = [world.ti('etl', 'task_1'), world.ti('etl', 'task_2')]
    const run = world.run('etl')
    const state = (t: {task_id: string}, key: string) => ({
      dag_run_id: run.id,
      task_id: t.task_id,
      map_index: -1,
      key,
      dag_id: 'etl',
      run_id: world.ti('etl').run_id,
      value: '"x"',
      updated_at: new Date(),
    })
    await v33.knex('task_state_store').insert([state(mine, 'cursor'), state(mine, 'offset'), state(other, 'cursor')])
    const keys = async () =>
      (await v33.knex('task_state_store').orderBy(['task_id', 'key']).select('task_id', 'key')).map(
        (r) => `${r.task_id}.${r.key}`,
      )

    expect((await completeOne(v33.knex, other.id)).result).toEqual({outcome: 'completed'})
    expect(await keys()).toEqual(['task_1.cursor', 'task_1.offset', 'task_2.cursor'])

    process.env.AIRFLOW__STATE_STORE__CLEAR_ON_SUCCESS = 'True'
    try {
      const result = await completeOne(v33.knex, mine.id)
      expect(result).toMatchObject({result: {outcome: 'completed'}, report: {task_state_cleared: 2}})
    } finally {
      delete process.env.AIRFLOW__STATE_STORE__CLEAR_ON_SUCCESS
    }
    expect(await keys()).toEqual(['task_2.cursor'])
  })
})
