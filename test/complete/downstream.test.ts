import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {envelope, runCli} from '../support/cli.js'
import {airflowOf, completeOne} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilAppBlocked} from '../support/locks.js'
import {scenario, writeFootprint} from '../support/scenario.js'

/**
 * The downstream preview on real PostgreSQL through the CLI: per item in --json and --ndjson,
 * one line per consumer DAG after the human table, the same in a dry run (which writes nothing).
 */
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase('3.2', 4)
})
afterAll(async () => db?.drop())

const cli = (...args: string[]) => runCli([args[0]!, '--database-url', db.url, ...args.slice(1)])

/** etl's two tasks each produce one asset; report needs both, weekly either; paused_report is paused. */
async function world(knex = db.knex) {
  return scenario(knex)
    .producer('etl', {tasks: 2, outlets: 1})
    .consumer('report', {on: ['etl']})
    .consumer('weekly', {on: ['etl'], condition: 'any'})
    .consumer('paused_report', {on: ['etl.task_1'], paused: true})
    .build()
}

describe('downstream preview', () => {
  it('--json: each item lists the consumers its events reach, ready or waiting for what, and the batch folds them', async () => {
    const w = await world()
    const first = w.ti('etl', 'task_1')
    const result = await cli('complete', '--ti-id', first.id, '--json', '--yes')
    expect(result.code).toBe(0)
    const {result: report} = envelope(result) as {
      result: {items: Array<{downstream: unknown[]}>; downstream: unknown[]}
    }
    const missing = w.asset('etl.task_2.out_1').name
    expect(report.items[0]!.downstream).toEqual([
      // 3.2 queues no paused DAG (#60022): its condition cannot be met by this completion.
      {
        dag_id: 'paused_report',
        ready: false,
        waiting_for: [w.asset('etl.task_1.out_1').name],
        waiting_for_count: 1,
        blocked_by: 'paused',
        satisfied: [],
        satisfied_count: 0,
        assets: 1,
      },
      {
        dag_id: 'report',
        ready: false,
        waiting_for: [missing],
        waiting_for_count: 1,
        satisfied: [w.asset('etl.task_1.out_1').name],
        satisfied_count: 1,
        assets: 2,
      },
      {
        dag_id: 'weekly',
        ready: true,
        waiting_for: [],
        waiting_for_count: 0,
        satisfied: [w.asset('etl.task_1.out_1').name],
        satisfied_count: 1,
        assets: 2,
      },
    ])
    expect(report.downstream).toHaveLength(3)

    // The second task completes the AND: report is ready now, from the rows the first one left.
    const second = await cli('complete', '--ti-id', w.ti('etl', 'task_2').id, '--json', '--yes')
    const reached = (
      envelope(second) as {result: {items: Array<{downstream: Array<{dag_id: string; ready: boolean}>}>}}
    ).result.items[0]!.downstream
    expect(reached.filter((dag) => dag.ready).map((dag) => dag.dag_id)).toEqual(['report', 'weekly'])
  })

  it('human output: one line per consumer after the table; a dry run says would run and writes nothing', async () => {
    const w = await world()
    const before = await writeFootprint(db.knex)
    const result = await cli('complete', '--dag-id', 'etl', '--dry-run')
    expect(result.code).toBe(0)
    expect(await writeFootprint(db.knex)).toEqual(before)
    const section = result.stdout.slice(result.stdout.indexOf('Downstream'))
    expect(section.split('\n')).toEqual([
      "Downstream (as the scheduler's next step will see it if this ran):",
      '  paused_report: no run while it is paused (0 of 1 asset)',
      '  report: would run (2 of 2 assets)',
      '  weekly: would run (2 of 2 assets)',
      '',
    ])
    expect(w.tis('etl')).toHaveLength(2)
  })

  it('--ndjson: each item line carries its preview and the summary line the fold', async () => {
    await world()
    const result = await cli('complete', '--dag-id', 'etl', '--ndjson', '--yes')
    expect(result.code).toBe(0)
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as {type: string; downstream?: Array<{dag_id: string; ready: boolean}>})
    expect(lines.filter((line) => line.type === 'item').every((line) => Array.isArray(line.downstream))).toBe(true)
    const summary = lines.find((line) => line.type === 'summary')!
    expect(summary.downstream!.map((dag) => [dag.dag_id, dag.ready])).toEqual([
      ['paused_report', false],
      ['report', true],
      ['weekly', true],
    ])
  })

  /**
   * Completes `tiId` while another transaction holds uncommitted queue rows (`rows`): once the
   * completion waits on one of their keys, `whileWaiting` runs, then the other transaction
   * commits. Returns the completion's preview of report.
   */
  const reportBesideAnother = async (
    tiId: string,
    rows: Array<{asset_id: number; target_dag_id: string; created_at: Date}>,
    whileWaiting: () => Promise<unknown> = async () => {},
  ) => {
    const other = await db.knex.transaction()
    try {
      await other('asset_dag_run_queue').insert(rows)
      const completing = cli('complete', '--ti-id', tiId, '--json', '--yes')
      // The item's queue insert waits on the other transaction's key (ON CONFLICT).
      await waitUntilAppBlocked(db.knex, 'airlock:complete')
      await whileWaiting()
      await other.commit()
      const result = await completing
      expect(result.code).toBe(0)
      const {result: report} = envelope(result) as {
        result: {items: Array<{downstream: Array<{dag_id: string; ready: boolean; waiting_for: string[]}>}>}
      }
      return report.items[0]!.downstream.find((dag) => dag.dag_id === 'report')
    } finally {
      if (!other.isCompleted()) await other.rollback()
    }
  }
  const queueRow = (assetId: number) => ({asset_id: assetId, target_dag_id: 'report', created_at: new Date()})

  it("a queue key another transaction committed while the queue statement waited on it: that transaction's other rows count too", async () => {
    const w = await world()
    // Another producer of both assets, not committed yet: its queue rows for report hold the keys.
    const rows = ['etl.task_1.out_1', 'etl.task_2.out_1'].map((name) => queueRow(w.asset(name).id))
    // The statement's snapshot predates that commit; the preview must still see task_2's asset
    // queued (by the other transaction), as the scheduler will.
    expect(await reportBesideAnother(w.ti('etl', 'task_1').id, rows)).toMatchObject({ready: true, waiting_for: []})
  })

  it('a raced key is noticed even when a row the snapshot showed for another key went before the insert', async () => {
    // report needs etl's two assets and src's one. The item queues etl's two keys; the first waits
    // on another producer's uncommitted key (which also queues src's asset), and while it waits the
    // scheduler takes the row the statement's snapshot showed for the second key, so the insert
    // writes that key afresh: inserted and shown at once, which a count of the two took for the
    // raced key.
    const w = await scenario(db.knex)
      .producer('etl', {tasks: 1, outlets: 2})
      .producer('src', {tasks: 1, outlets: 1})
      .consumer('report', {on: ['etl', 'src']})
      .build()
    const [first, second] = [w.asset('etl.task_1.out_1').id, w.asset('etl.task_1.out_2').id].sort((a, b) => a - b)
    await db.knex('asset_dag_run_queue').insert(queueRow(second!))
    const taken = () => db.knex('asset_dag_run_queue').where({asset_id: second, target_dag_id: 'report'}).delete()
    const rows = [queueRow(first!), queueRow(w.asset('src.task_1.out_1').id)]
    // The scheduler will see all three assets queued.
    expect(await reportBesideAnother(w.ti('etl').id, rows, taken)).toMatchObject({ready: true, waiting_for: []})
  })

  it('one process, one item after another: the second reads the condition it cached and the rows the first committed', async () => {
    await world()
    const result = await cli('complete', '--dag-id', 'etl', '--concurrency', '1', '--ndjson', '--yes')
    expect(result.code).toBe(0)
    const items = result.stdout
      .trim()
      .split('\n')
      .map(
        (line) =>
          JSON.parse(line) as {
            type: string
            task_id?: string
            downstream?: Array<{dag_id: string; ready: boolean; waiting_for: string[]}>
          },
      )
      // In the order they finished: one after the other.
      .filter((line) => line.type === 'item')
    const report = (item: (typeof items)[number]) => item.downstream!.find((dag) => dag.dag_id === 'report')!
    const other = items[0]!.task_id === 'task_1' ? 'etl.task_2.out_1' : 'etl.task_1.out_1'
    expect(report(items[0]!)).toMatchObject({ready: false, waiting_for: [other]})
    expect(report(items[1]!)).toMatchObject({ready: true, waiting_for: []})
  })

  it('a consumer scheduled on an alias: an item whose consumer condition is cached still reads the aliases linked to its queue', async () => {
    const w = await scenario(db.knex)
      .producer('etl', {tasks: 2, outlets: 1, aliases: ['lake']})
      .consumer('lake_report', {on: [], alias: 'lake'})
      .build()
    // One store for both items, as one process runs them: the second finds the condition cached.
    const airflow = await airflowOf(db.knex)
    const throughLake = [{asset: {name: 'lake.daily', uri: 's3://lake/daily'}, alias: 'lake'}]
    const lakeReport = async (taskId: string) => {
      const item = await completeOne(db.knex, w.ti('etl', taskId).id, {outletEvents: throughLake, airflow})
      expect(item.result).toEqual({outcome: 'completed'})
      return (item.report!.downstream as Array<{dag_id: string}>).find((dag) => dag.dag_id === 'lake_report')
    }
    const met = {ready: true, waiting_for: [], satisfied: ['alias lake'], assets: 1}
    expect(await lakeReport('task_1')).toMatchObject(met)
    expect(await lakeReport('task_2')).toMatchObject(met)
  })

  it('a consumer whose is_paused is NULL gets no run, as the scheduler reads is_paused == false()', async () => {
    // dag.is_paused is nullable until 3.2.0 (0108_3_2_0_fix_migration_file_ORM_inconsistencies.py
    // makes it NOT NULL), so on 3.1.
    const own = await createTestDatabase('3.1', 2)
    try {
      const w = await world(own.knex)
      await own.knex('dag').where({dag_id: 'weekly'}).update({is_paused: null})
      const result = await runCli([
        'complete',
        '--database-url',
        own.url,
        '--ti-id',
        w.ti('etl', 'task_1').id,
        '--json',
        '--yes',
      ])
      const items = (envelope(result) as {result: {items: Array<{downstream: Array<{dag_id: string}>}>}}).result.items
      expect(items[0]!.downstream.find((dag) => dag.dag_id === 'weekly')).toMatchObject({
        ready: false,
        blocked_by: 'paused',
      })
    } finally {
      await own.drop()
    }
  })

  it('reads the queue rows only of a consumer whose condition can use them: none without a serialized DAG, none for a leafless one', async () => {
    const w = await world()
    const {db: engine, store} = await airflowOf(db.knex)
    const assetIds = [w.asset('etl.task_1.out_1').id, w.asset('etl.task_2.out_1').id]
    await db
      .knex('asset_dag_run_queue')
      .insert(
        ['report', 'weekly'].flatMap((dagId) =>
          assetIds.map((assetId) => ({asset_id: assetId, target_dag_id: dagId, created_at: new Date()})),
        ),
      )
    // weekly: no serialized DAG at all (the scheduler deletes such a DAG's queue rows, never runs it).
    await db.knex('serialized_dag').where({dag_id: 'weekly'}).delete()
    const queuedOf = async () =>
      Object.fromEntries(
        (await store.readDownstream(engine.executor, assetIds, [])).map((f) => [
          f.dagId,
          f.queued.assets.map((a) => a.name).sort(),
        ]),
      )
    expect(await queuedOf()).toEqual({
      paused_report: [],
      report: ['etl.task_1.out_1', 'etl.task_2.out_1'],
      weekly: [],
    })
    // report's latest serialized DAG now has a condition without a leaf (`schedule=[]`): once the
    // process knows that hash, its queue rows are not read either; the verdict is the same.
    const [latest] = await db.knex('serialized_dag').where({dag_id: 'report'}).select('data')
    const data = latest.data as {dag: {timetable: {__var: {asset_condition: unknown}}}}
    data.dag.timetable.__var.asset_condition = {__type: 'asset_all', objects: []}
    await db
      .knex('serialized_dag')
      .where({dag_id: 'report'})
      .update({data: JSON.stringify(data), dag_hash: 'leafless'})
    expect((await queuedOf()).report).toEqual(['etl.task_1.out_1', 'etl.task_2.out_1'])
    expect((await queuedOf()).report).toEqual([])
  })

  it('--no-downstream: no preview statement, no downstream in the items, no section', async () => {
    await world()
    const result = await cli('complete', '--dag-id', 'etl', '--no-downstream', '--json', '--yes')
    expect(result.code).toBe(0)
    const {result: report} = envelope(result) as {result: {items: Array<{downstream: unknown[]}>; downstream?: unknown}}
    expect(report.items.map((item) => item.downstream)).toEqual([[], []])
    const human = await cli('complete', '--dag-id', 'etl', '--from-state', 'success', '--no-downstream', '--dry-run')
    expect(human.stdout).not.toContain('Downstream')
  })

  it('replay-events: the missing events it would write show the same preview', async () => {
    const w = await scenario(db.knex)
      .producer('etl', {tasks: 2, outlets: 1, state: 'success', emitted: true, workerLog: true})
      .consumer('report', {on: ['etl']})
      .build()
    // The incident: task_1's event is lost; task_2's is there, so report's queue row for it stands.
    await db
      .knex('asset_event')
      .where({asset_id: w.asset('etl.task_1.out_1').id})
      .delete()
    await db
      .knex('asset_dag_run_queue')
      .insert({asset_id: w.asset('etl.task_2.out_1').id, target_dag_id: 'report', created_at: new Date()})
    const result = await cli('replay-events', '--dag-id', 'etl', '--dry-run', '--json')
    expect(result.code).toBe(0)
    const {result: report} = envelope(result) as {
      result: {items: Array<{outcome: string; downstream: Array<{dag_id: string; ready: boolean}>}>}
    }
    expect(report.items.map((item) => [item.outcome, item.downstream])).toEqual([
      [
        'would_replay',
        [
          {
            dag_id: 'report',
            ready: true,
            waiting_for: [],
            waiting_for_count: 0,
            satisfied: ['etl.task_1.out_1', 'etl.task_2.out_1'],
            satisfied_count: 2,
            assets: 2,
          },
        ],
      ],
    ])
  })
})
