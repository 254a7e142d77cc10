import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {replayMissingWriter} from '../../src/replay/replayMissingWriter.js'
import {readFirstScanPage, summarizeRows, summarizeSelection} from '../../src/selection/selection.js'
import {runProtocol} from '../../src/protocol/protocol.js'
import {envelope, runCli, startCli} from '../support/cli.js'
import {airflowOf} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilAppBlocked, whileRowLocked} from '../support/locks.js'
import {
  countRows,
  eventsOf,
  logWorkerSuccess,
  retryAsAirflowDoes,
  scenario,
  writeFootprint,
} from '../support/scenario.js'

/**
 * replay-events and export-events on real PostgreSQL. Each test builds its world (see
 * test/support/scenario.ts); a "lost events" incident is the test deleting events a successful
 * task instance had emitted.
 */
let db: TestDatabase
let dir: string
beforeAll(async () => {
  db = await createTestDatabase('3.2', 12)
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'airlock-replay-'))
})
afterAll(async () => {
  await db?.drop()
  await fs.rm(dir, {recursive: true, force: true})
})

const cli = (command: string, ...args: string[]) => runCli([command, '--database-url', db.url, ...args])

/** The incident: every event of these assets is gone. */
async function loseEvents(names: string[]): Promise<void> {
  const ids = await db.knex('asset').whereIn('name', names).pluck('id')
  await db.knex('asset_event').whereIn('asset_id', ids).delete()
}

async function replayOne(tiId: string) {
  const airflow = await airflowOf(db.knex)
  const writer = replayMissingWriter(airflow.store, {defaultExtra: '{}', airlockVersion: 'test'})
  return runProtocol(airflow, {tiId}, undefined, writer, {
    lockTimeoutMs: 5000,
    statementTimeoutMs: 30_000,
    dryRun: false,
  })
}

describe('replay-events, missing mode', () => {
  it('a missing-events selection that fits one page is read once: counted, listed and worked from that page', async () => {
    await scenario(db.knex)
      .producer('etl', {tasks: 3, outlets: 2, state: 'success', emitted: true, workerLog: true})
      .build()
    await loseEvents(['etl.task_1.out_1'])
    const result = await cli('replay-events', '--dag-id', 'etl', '--dry-run', '--verbose')
    expect(result.code).toBe(0)
    // --verbose names each statement: one page of the selection, no grouped count, no second page.
    const statements = result.stderr.split('\n')
    expect(statements.filter((line) => line.startsWith('sql "select s.* from (select ti.id'))).toHaveLength(1)
    expect(
      statements.filter((line) => line.startsWith('sql "select s.dag_id, s.run_id, s.state, count(*)')),
    ).toHaveLength(0)
    expect(result.stderr).toContain('Selected 1 task instance in 1 run of 1 DAG')
    expect(result.stdout).toContain('1 would replay')
  })

  it('the breakdown of a selection read whole is the grouped query’s, run by run and state by state', async () => {
    await scenario(db.knex)
      .producer('etl', {tasks: 3, outlets: 2, runs: 3, state: 'success', emitted: true, workerLog: true})
      .build()
    await loseEvents(['etl.task_1.out_1', 'etl.task_3.out_2'])
    const {db: database, store} = await airflowOf(db.knex)
    const filter = {
      dagId: 'etl',
      runIds: [],
      taskIds: [],
      states: ['success'],
      timeColumn: 'end_date' as const,
      missingEventsOnly: true,
    }
    const first = await readFirstScanPage(store, database.executor, filter)
    expect(first.whole).toBe(true)
    expect(first.rows).toHaveLength(6)
    const fromPage = summarizeRows(first.rows)
    expect(fromPage).toEqual(await summarizeSelection(store, database.executor, filter))
    expect(fromPage.breakdown.runs.map((run) => run.task_instances)).toEqual([2, 2, 2])
  })

  it('restores exactly the missing events and queue rows, writes provenance to the log, and a second run does nothing', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {tasks: 3, outlets: 2, state: 'success', emitted: true, workerLog: true})
      .consumer('report', {on: ['etl']})
      .build()
    await loseEvents(['etl.task_1.out_1', 'etl.task_3.out_2'])
    const footprint = await writeFootprint(db.knex)

    const result = await cli('replay-events', '--dag-id', 'etl', '--yes', '--json')
    expect(result.code).toBe(0)
    expect(envelope(result)).toMatchObject({result: {summary: {selected: 2, replayed: 2, events_created: 2}}})

    const t1 = world.ti('etl', 'task_1')
    const t3 = world.ti('etl', 'task_3')
    expect((await eventsOf(db.knex, t1)).map((e) => e.asset_name).sort()).toEqual([
      'etl.task_1.out_1',
      'etl.task_1.out_2',
    ])
    expect((await eventsOf(db.knex, t3)).map((e) => e.asset_name).sort()).toEqual([
      'etl.task_3.out_1',
      'etl.task_3.out_2',
    ])
    const after = await writeFootprint(db.knex)
    expect(after).toEqual({
      ...footprint,
      asset_event: footprint.asset_event! + 2,
      log: footprint.log! + 2,
      asset_dag_run_queue: footprint.asset_dag_run_queue! + 2,
    })
    // The consumer is queued for the replayed assets, and only for them.
    expect(await db.knex('asset_dag_run_queue').orderBy('asset_id').select('asset_id', 'target_dag_id')).toEqual([
      {asset_id: world.asset('etl.task_1.out_1').id, target_dag_id: 'report'},
      {asset_id: world.asset('etl.task_3.out_2').id, target_dag_id: 'report'},
    ])
    const log = await db.knex('log').where({event: 'airlock.replay-events', task_id: 'task_1'}).first()
    expect(JSON.parse(log.extra)).toMatchObject({
      airlock: {
        command: 'replay-events',
        mode: 'missing',
        assets: ['etl.task_1.out_1'],
        ti: {dag_id: 'etl', task_id: 'task_1'},
      },
    })
    // Provenance is in the log, not in the event's extra (consumers read extras).
    expect((await eventsOf(db.knex, t1)).every((e) => JSON.stringify(e.extra) === '{}')).toBe(true)

    const again = await cli('replay-events', '--dag-id', 'etl', '--yes', '--json')
    expect(envelope(again)).toMatchObject({status: 0, result: {summary: {selected: 0, events_created: 0}}})
    expect(await writeFootprint(db.knex)).toEqual(after)
  })

  it('a connection killed during the missing-events scan costs one read again: the replay still repairs everything', async () => {
    await scenario(db.knex)
      .producer('etl', {tasks: 2, outlets: 1, state: 'success', emitted: true, workerLog: true})
      .build()
    await loseEvents(['etl.task_1.out_1', 'etl.task_2.out_1'])
    // The scan waits on a table lock (nothing else in the replay reads that table first), and is
    // killed there, as a DBA's pg_terminate_backend or a failover would kill it.
    const holder = await db.knex.transaction()
    await holder.raw('lock table task_outlet_asset_reference in access exclusive mode')
    const replay = startCli(['replay-events', '--database-url', db.url, '--dag-id', 'etl', '--yes', '--json'])
    try {
      const pid = await waitUntilAppBlocked(db.knex, 'airlock:replay-events')
      await db.knex.raw('select pg_terminate_backend(?)', [pid])
    } finally {
      await holder.commit()
    }
    const result = await replay.finished
    expect(result.code, result.stderr).toBe(0)
    expect(envelope(result)).toMatchObject({result: {summary: {selected: 2, events_created: 2}}})
  })

  it('two replayers racing on one task instance produce one set of events', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 2, state: 'success', emitted: true, workerLog: true})
      .build()
    await loseEvents(['etl.produce.out_1', 'etl.produce.out_2'])
    const target = world.ti('etl')
    let racing: Promise<Array<Awaited<ReturnType<typeof replayOne>>>> | undefined
    await whileRowLocked(db.knex, target.id, async () => {
      const a = replayOne(target.id)
      await waitUntilAppBlocked(db.knex, `airlock:replay:${target.id}`)
      const b = replayOne(target.id)
      await expect
        .poll(
          async () =>
            (
              await db.knex.raw(
                `select count(*)::int as n from pg_stat_activity
                where datname = current_database() and application_name like ? and wait_event_type = 'Lock'`,
                // A tag gains how long it has waited (:w<ms>) from its second slice on.
                [`airlock:replay:${target.id}%`],
              )
            ).rows[0].n,
        )
        .toBe(2)
      racing = Promise.all([a, b])
    })
    const results = await racing!
    expect(results.map((r) => r.result.outcome).sort()).toEqual(['nothing_missing', 'replayed'])
    expect(await eventsOf(db.knex, target)).toHaveLength(2)
  })

  it('a task instance cleared between the read and the lock: changed, nothing written', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 2, state: 'success', emitted: true, workerLog: true})
      .build()
    await loseEvents(['etl.produce.out_1'])
    const target = world.ti('etl')
    const footprint = await writeFootprint(db.knex)
    let replay: ReturnType<typeof replayOne> | undefined
    await whileRowLocked(db.knex, target.id, async (holder) => {
      replay = replayOne(target.id)
      await waitUntilAppBlocked(db.knex, `airlock:replay:${target.id}`)
      await holder.raw(`update task_instance set state = null where id = ?`, [target.id])
    })
    const result = await replay!
    expect(result.result).toEqual({outcome: 'changed', previousState: null})
    expect({...(await writeFootprint(db.knex)), success_tis: 0}).toEqual({...footprint, success_tis: 0})
  })
})

describe('replay-events, missing mode: the events of this try, whatever the clocks say', () => {
  it('a task instance that never started, completed by airlock: replay finds nothing missing', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 5, state: 'queued'}).build()
    const target = world.ti('etl')
    await db.knex('task_instance').where({id: target.id}).update({start_date: null, end_date: null})
    const completed = await cli('complete', '--ti-id', target.id, '--from-state', 'queued', '--yes', '--json')
    expect(completed.code).toBe(0)
    expect(await eventsOf(db.knex, target)).toHaveLength(5)
    // airlock set start_date = end_date, after the events it stamped before taking the lock.
    const ti = await db.knex('task_instance').where({id: target.id}).first()
    const events = await eventsOf(db.knex, target)
    expect(events.every((e) => (e.timestamp as Date) < ti.start_date)).toBe(true)

    const replay = await cli('replay-events', '--ti-id', target.id, '--yes', '--json')
    expect(replay.code).toBe(0)
    expect(envelope(replay)).toMatchObject({result: {summary: {events_created: 0}}})
    expect(await eventsOf(db.knex, target)).toHaveLength(5)
  })

  it("a worker clock ahead of the database's: events before start_date still belong to the try", async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 3, state: 'running'}).build()
    const target = world.ti('etl')
    await db.knex.raw(`update task_instance set start_date = now() + interval '2 seconds' where id = ?`, [target.id])
    expect((await cli('complete', '--ti-id', target.id, '--yes', '--json')).code).toBe(0)
    const replay = await cli('replay-events', '--ti-id', target.id, '--yes', '--json')
    expect(replay.code).toBe(0)
    expect(envelope(replay)).toMatchObject({result: {summary: {events_created: 0}}})
    expect(await eventsOf(db.knex, target)).toHaveLength(3)
  })

  it('a worker clock hours ahead: the selection and the item still find the events of the try (the bound is a day before it was queued)', async () => {
    await scenario(db.knex)
      .producer('skewed', {tasks: 2, outlets: 2, state: 'success', emitted: true, workerLog: true})
      .build()
    await db.knex.raw(
      `update task_instance set queued_dttm = now() + interval '20 hours', start_date = now() + interval '20 hours' where dag_id = 'skewed'`,
    )
    const replay = await cli('replay-events', '--dag-id', 'skewed', '--yes', '--json')
    expect(replay.code).toBe(0)
    expect(envelope(replay)).toMatchObject({result: {summary: {selected: 0, events_created: 0}}})
  })

  it('an event stamped more than a day before its try was queued is not that try’s: both the selection and the item see it missing', async () => {
    const world = await scenario(db.knex)
      .producer('stale', {tasks: 2, outlets: 1, state: 'success', emitted: true, workerLog: true})
      .build()
    const target = world.ti('stale', 'task_1')
    await db.knex.raw(`update task_instance set queued_dttm = now(), start_date = now() where dag_id = 'stale'`)
    await db.knex.raw(
      `update asset_event set "timestamp" = now() - interval '2 days' where source_dag_id = 'stale' and source_task_id = 'task_1'`,
    )
    const replay = await cli('replay-events', '--dag-id', 'stale', '--yes', '--json')
    expect(replay.code).toBe(0)
    expect(envelope(replay)).toMatchObject({result: {summary: {selected: 1, events_created: 1}}})
    expect(await eventsOf(db.knex, target)).toHaveLength(2)
  })

  it("events of an earlier try do not count for this one: they end where task_instance_history's try ends", async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 2, state: 'success', emitted: true, workerLog: true})
      .build()
    const first = world.ti('etl')
    // Airflow archives the successful try and runs it again; the new try succeeds without events.
    await db.knex.raw(`update task_instance set end_date = now() - interval '1 second' where id = ?`, [first.id])
    const second = await retryAsAirflowDoes(db.knex, first.id, 'success')
    await logWorkerSuccess(db.knex, second)
    const replay = await cli('replay-events', '--ti-id', second, '--yes', '--json')
    expect(replay.code).toBe(0)
    expect(envelope(replay)).toMatchObject({result: {summary: {events_created: 2}}})
  })
})

describe('replay-events, missing mode: lost, or never emitted?', () => {
  it("a try marked success through Airflow's REST API or UI is not_emitted, unless --include-marked-success", async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2, state: 'success'}).build()
    const target = world.ti('etl')
    // What action_logging writes for PATCH …/taskInstances/produce with {"new_state": "success"}.
    await db.knex('log').insert({
      dttm: db.knex.raw('now()'),
      dag_id: 'etl',
      task_id: 'produce',
      run_id: target.run_id,
      event: 'patch_task_instance',
      owner: 'admin',
      extra: JSON.stringify({new_state: 'success', note: null, method: 'PATCH'}),
    })
    const left = await cli('replay-events', '--ti-id', target.id, '--yes', '--json')
    expect(left.code).toBe(0)
    expect(envelope(left)).toMatchObject({
      result: {items: [{outcome: 'not_emitted', detail: expect.stringContaining('--include-marked-success')}]},
    })
    expect(await eventsOf(db.knex, target)).toHaveLength(0)
    // The audit does not call it missing either.
    const audit = envelope(await cli('audit-events', '--dag-id', 'etl', '--json')) as {
      result: {counts: {missing_events: number}}
    }
    expect(audit.result.counts.missing_events).toBe(0)

    const forced = await cli('replay-events', '--ti-id', target.id, '--include-marked-success', '--yes', '--json')
    expect(envelope(forced)).toMatchObject({result: {items: [{outcome: 'replayed', events: 2}]}})
  })

  it('a mark-success of an earlier try does not silence a later try that lost its events', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 1, state: 'success'}).build()
    const first = world.ti('etl')
    await db.knex('log').insert({
      dttm: db.knex.raw(`now() - interval '1 hour'`),
      dag_id: 'etl',
      task_id: 'produce',
      run_id: first.run_id,
      event: 'patch_task_instance',
      extra: JSON.stringify({new_state: 'success', method: 'PATCH'}),
    })
    await db.knex.raw(`update task_instance set updated_at = now() - interval '30 minutes' where id = ?`, [first.id])
    const second = await retryAsAirflowDoes(db.knex, first.id, 'success')
    await logWorkerSuccess(db.knex, second)
    const replay = await cli('replay-events', '--ti-id', second, '--yes', '--json')
    expect(envelope(replay)).toMatchObject({result: {items: [{outcome: 'replayed', events: 1}]}})
  })

  it('complete --no-events is deliberate too: not_emitted', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2}).build()
    const target = world.ti('etl')
    expect((await cli('complete', '--ti-id', target.id, '--no-events', '--yes')).code).toBe(0)
    const replay = await cli('replay-events', '--ti-id', target.id, '--yes', '--json')
    expect(envelope(replay)).toMatchObject({result: {items: [{outcome: 'not_emitted'}]}})
    expect(await eventsOf(db.knex, target)).toHaveLength(0)
  })

  it('an undone replay is no evidence: the try is unknown again, the audit finds nothing lost, a plain replay writes nothing', async () => {
    // Success with no row saying how (a bulk mark): unknown.
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 2, state: 'success'})
      .consumer('report', {on: ['etl']})
      .build()
    const target = world.ti('etl')
    const forced = await cli('replay-events', '--ti-id', target.id, '--include-unknown', '--yes', '--json')
    const item = (envelope(forced) as {result: {items: Array<{outcome: string; events: number; log_id: number}>}})
      .result.items[0]!
    expect(item).toMatchObject({outcome: 'replayed', events: 2})
    // The operator takes the replay back: those events should not have been written.
    const undone = await cli('undo', '--log-id', String(item.log_id), '--yes', '--json')
    expect(undone.code, undone.stderr).toBe(0)
    expect(await eventsOf(db.knex, target)).toHaveLength(0)

    const audit = envelope(await cli('audit-events', '--dag-id', 'etl', '--json')) as {
      result: {counts: Record<string, number>}
    }
    // One finding per outlet: both are unknown.
    expect(audit.result.counts).toMatchObject({missing_events: 0, missing_unknown: 2})
    const again = await cli('replay-events', '--ti-id', target.id, '--yes', '--json')
    expect(envelope(again)).toMatchObject({result: {items: [{outcome: 'unknown'}]}})
    expect(await eventsOf(db.knex, target)).toHaveLength(0)
  })

  it("complete, undo, then a mark-success in the UI: not_emitted, the undone completion's row no evidence", async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 1}).build()
    const target = world.ti('etl')
    const done = await cli('complete', '--ti-id', target.id, '--yes', '--json')
    const item = (envelope(done) as {result: {items: Array<{outcome: string; log_id: number}>}}).result.items[0]!
    expect(item.outcome).toBe('completed')
    const undone = await cli('undo', '--log-id', String(item.log_id), '--yes', '--json')
    expect(undone.code, undone.stderr).toBe(0)
    // Then the same try is marked success in the UI (PATCH …/taskInstances/produce): no events, on purpose.
    await db.knex('log').insert({
      dttm: db.knex.raw('clock_timestamp()'),
      dag_id: 'etl',
      task_id: 'produce',
      run_id: target.run_id,
      event: 'patch_task_instance',
      owner: 'admin',
      extra: JSON.stringify({new_state: 'success', note: null, method: 'PATCH'}),
    })
    await db.knex.raw(
      `update task_instance set state = 'success', end_date = clock_timestamp(), updated_at = clock_timestamp() where id = ?`,
      [target.id],
    )
    const replay = await cli('replay-events', '--ti-id', target.id, '--yes', '--json')
    expect(envelope(replay)).toMatchObject({result: {items: [{outcome: 'not_emitted'}]}})
    expect(await eventsOf(db.knex, target)).toHaveLength(0)
  })
})

describe('replay-events, missing mode: only what the database says was lost', () => {
  /** What Airflow's action_logging writes before a REST or UI request changes anything. */
  const restLog = (row: {event: string; run_id: string; task_id?: string | null; extra: Record<string, unknown>}) =>
    db.knex('log').insert({
      dttm: db.knex.raw('now()'),
      dag_id: 'etl',
      task_id: row.task_id ?? null,
      run_id: row.run_id,
      event: row.event,
      owner: 'admin',
      // Python's json.dumps spacing, the body's keys, then "method".
      extra: JSON.stringify(row.extra).replaceAll('":', '": ').replaceAll(',"', ', "'),
    })
  type Audit = {result: {counts: Record<string, number>; findings: Array<{class: string; ti_id: string | null}>}}
  const audit = async () => envelope(await cli('audit-events', '--dag-id', 'etl', '--json')) as Audit

  it('a whole run marked success from the UI or REST (patch_dag_run) is not_emitted on every task, and queues nobody', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {tasks: 3, outlets: 1, state: 'success'})
      .consumer('report', {on: ['etl']})
      .build()
    await restLog({
      event: 'patch_dag_run',
      run_id: world.ti('etl', 'task_1').run_id,
      extra: {note: null, state: 'success', method: 'PATCH'},
    })
    const footprint = await writeFootprint(db.knex)
    const replay = await cli('replay-events', '--dag-id', 'etl', '--yes', '--json')
    expect(replay.code).toBe(0)
    const out = envelope(replay) as {
      result: {summary: Record<string, number>; items: Array<{outcome: string; detail: string}>}
    }
    expect(out.result.summary).toMatchObject({selected: 3, not_emitted: 3, replayed: 0, events_created: 0})
    expect(out.result.items.every((i) => i.outcome === 'not_emitted' && i.detail.includes('patch_dag_run'))).toBe(true)
    expect(await writeFootprint(db.knex)).toEqual(footprint)
    expect((await audit()).result.counts).toMatchObject({missing_events: 0, missing_unknown: 0, not_emitted: 3})
  })

  it('a bulk mark leaves no log row: unknown, nothing written, and only --include-unknown replays it', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 2, state: 'success'})
      .consumer('report', {on: ['etl']})
      .build()
    const target = world.ti('etl')
    const footprint = await writeFootprint(db.knex)
    const left = await cli('replay-events', '--ti-id', target.id, '--yes', '--json')
    expect(left.code).toBe(0)
    expect(envelope(left)).toMatchObject({
      result: {items: [{outcome: 'unknown', detail: expect.stringContaining('--include-unknown') as string}]},
    })
    expect(await writeFootprint(db.knex)).toEqual(footprint)
    const found = await audit()
    // One finding per outlet: both are unknown.
    expect(found.result.counts).toMatchObject({missing_events: 0, missing_unknown: 2})
    expect(found.result.findings).toContainEqual(expect.objectContaining({class: 'missing_unknown', ti_id: target.id}))

    const forced = await cli('replay-events', '--ti-id', target.id, '--include-unknown', '--yes', '--json')
    expect(envelope(forced)).toMatchObject({result: {items: [{outcome: 'replayed', events: 2}]}})
    expect(await db.knex('asset_dag_run_queue').pluck('target_dag_id')).toEqual(['report', 'report'])
  })

  it("the worker's success row of an earlier try does not make this try's events lost", async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1, state: 'success', emitted: true, workerLog: true})
      .build()
    const second = await retryAsAirflowDoes(db.knex, world.ti('etl').id, 'success')
    const replay = await cli('replay-events', '--ti-id', second, '--yes', '--json')
    expect(envelope(replay)).toMatchObject({result: {items: [{outcome: 'unknown'}]}})
    expect(await eventsOf(db.knex, world.ti('etl'))).toHaveLength(1)
  })

  it("a task group marked success (patch_task_group_instances): its tasks are not_emitted, the others' cause unknown", async () => {
    const world = await scenario(db.knex)
      .producer('etl', {tasks: ['load.a', 'load.b', 'loader'], outlets: 1, state: 'success'})
      .build()
    await restLog({
      event: 'patch_task_group_instances',
      run_id: world.ti('etl', 'load.a').run_id,
      extra: {group_id: 'load', new_state: 'success', note: null, method: 'PATCH'},
    })
    const replay = envelope(await cli('replay-events', '--dag-id', 'etl', '--yes', '--json')) as {
      result: {items: Array<{task_id: string; outcome: string}>}
    }
    expect(Object.fromEntries(replay.result.items.map((i) => [i.task_id, i.outcome]))).toEqual({
      'load.a': 'not_emitted',
      'load.b': 'not_emitted',
      loader: 'unknown',
    })
  })

  it('a run of `airflow dags test` is not_emitted: its --mark-success-pattern tasks never ran', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 1, state: 'success'}).build()
    await db.knex('dag_run').update({triggered_by: 'test'})
    const replay = await cli('replay-events', '--ti-id', world.ti('etl').id, '--yes', '--json')
    expect(envelope(replay)).toMatchObject({
      result: {items: [{outcome: 'not_emitted', detail: expect.stringContaining('dags test') as string}]},
    })
  })

  it('a mark-success logged while the replay waits for the row lock: rechecked under the lock, not_emitted, nothing written', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 2, state: 'success'}).build()
    const target = world.ti('etl')
    const footprint = await writeFootprint(db.knex)
    const airflow = await airflowOf(db.knex)
    const writer = replayMissingWriter(airflow.store, {
      defaultExtra: '{}',
      airlockVersion: 'test',
      includeUnknown: true,
    })
    let replay: ReturnType<typeof runProtocol> | undefined
    await whileRowLocked(db.knex, target.id, async () => {
      replay = runProtocol(airflow, {tiId: target.id}, undefined, writer, {
        lockTimeoutMs: 5000,
        statementTimeoutMs: 30_000,
        dryRun: false,
      })
      await waitUntilAppBlocked(db.knex, `airlock:replay:${target.id}`)
      // The UI's PATCH logs first, then waits for the same row lock to set the state.
      await restLog({
        event: 'patch_task_instance',
        run_id: target.run_id,
        task_id: 'produce',
        extra: {new_state: 'success', method: 'PATCH'},
      })
    })
    expect((await replay!).result).toMatchObject({
      outcome: 'not_emitted',
      detail: expect.stringContaining('patch_task_instance') as string,
    })
    expect({...(await writeFootprint(db.knex)), log: footprint.log}).toEqual(footprint)
  })

  it('the audit reports as missing_events exactly what a replay writes, and as missing_unknown exactly what --include-unknown adds', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {tasks: 6, outlets: 1, state: 'success', emitted: true})
      .consumer('report', {on: ['etl']})
      .build()
    await db.knex('asset_event').delete()
    // Two are left without any evidence (task_3 and task_5): unknown.
    const [lost, airlockWrote, , markedTask, , noEvents] = world.tis('etl')
    await logWorkerSuccess(db.knex, lost!.id)
    // airlock's own complete wrote events for this try (named in its row), then they were lost.
    await db.knex('task_instance').where({id: airlockWrote!.id}).update({state: 'running'})
    await db.knex('task_instance').where({id: noEvents!.id}).update({state: 'running'})
    expect((await cli('complete', '--ti-id', airlockWrote!.id, '--yes')).code).toBe(0)
    expect((await cli('complete', '--ti-id', noEvents!.id, '--no-events', '--yes')).code).toBe(0)
    await db.knex('asset_event').delete()
    await restLog({
      event: 'patch_task_instance',
      run_id: markedTask!.run_id,
      task_id: markedTask!.task_id,
      extra: {new_state: 'success', method: 'PATCH'},
    })
    // A run-level mark of another run: it says nothing about this run's task instances.
    await restLog({event: 'patch_dag_run', run_id: 'manual__other', extra: {state: 'success', method: 'PATCH'}})

    type Replay = {result: {items: Array<{ti_id: string; outcome: string}>}}
    const wouldReplay = async (...flags: string[]) =>
      (
        envelope(await cli('replay-events', '--dag-id', 'etl', '--dry-run', '--yes', '--json', ...flags)) as Replay
      ).result.items
        .filter((i) => i.outcome === 'would_replay')
        .map((i) => i.ti_id)
        .sort()
    const found = await audit()
    const of = (cls: string) =>
      found.result.findings
        .filter((f) => f.class === cls)
        .map((f) => f.ti_id)
        .sort()
    expect(of('missing_events')).toEqual([lost!.id, airlockWrote!.id].sort())
    expect(of('missing_events')).toEqual(await wouldReplay())
    expect([...of('missing_events'), ...of('missing_unknown')].sort()).toEqual(await wouldReplay('--include-unknown'))
    expect(found.result.counts).toMatchObject({missing_events: 2, missing_unknown: 2, not_emitted: 2})
  })
})

describe('replay-events, missing mode on Airflow 3.0: no worker log row exists', () => {
  let old: TestDatabase
  beforeAll(async () => {
    old = await createTestDatabase('3.0', 4)
  })
  afterAll(async () => {
    await old?.drop()
  })
  const oldCli = (command: string, ...args: string[]) => runCli([command, '--database-url', old.url, ...args])

  it('events a worker wrote and the incident deleted are unknown: 3.0 logs no success, so nothing proves they were lost', async () => {
    const world = await scenario(old.knex).producer('etl', {outlets: 2, state: 'success', emitted: true}).build()
    await old.knex('asset_event').delete()
    const replay = await oldCli('replay-events', '--dag-id', 'etl', '--yes', '--json')
    expect(replay.code).toBe(0)
    expect(envelope(replay)).toMatchObject({result: {summary: {unknown: 1, replayed: 0, events_created: 0}}})
    expect(await eventsOf(old.knex, world.ti('etl'))).toHaveLength(0)
  })

  it('events airlock complete wrote and the incident deleted are replayed: its audit row names them', async () => {
    const world = await scenario(old.knex).producer('etl', {outlets: 2}).build()
    expect((await oldCli('complete', '--ti-id', world.ti('etl').id, '--yes')).code).toBe(0)
    await old.knex('asset_event').delete()
    const replay = await oldCli('replay-events', '--dag-id', 'etl', '--yes', '--json')
    expect(envelope(replay)).toMatchObject({result: {summary: {replayed: 1, events_created: 2}}})
  })
})

describe('replay-events by id and from a file; export-events', () => {
  it('--event-id re-emits an event with the same content and queues its consumers again', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 2, state: 'success', emitted: true, workerLog: true})
      .consumer('report', {on: ['etl']})
      .consumer('paused', {on: ['etl'], paused: true})
      .build()
    const original = (await eventsOf(db.knex, world.ti('etl')))[0]!
    const result = await cli('replay-events', '--event-id', String(original.id), '--json')
    const out = envelope(result) as {result: {items: Array<{new_event_id: number; outcome: string; queued: number}>}}
    expect(result.code).toBe(0)
    expect(out.result.items[0]).toMatchObject({outcome: 'replayed', queued: 1})
    const copy = await db.knex('asset_event').where({id: out.result.items[0]!.new_event_id}).first()
    expect(copy).toMatchObject({
      asset_id: original.asset_id,
      extra: original.extra,
      source_dag_id: 'etl',
      source_task_id: 'produce',
      source_run_id: original.source_run_id,
      source_map_index: -1,
    })
    expect(copy.timestamp.getTime()).toBeGreaterThan((original.timestamp as Date).getTime())
    expect(await db.knex('asset_dag_run_queue').where({asset_id: original.asset_id}).pluck('target_dag_id')).toEqual([
      'report',
    ])

    const missing = await cli('replay-events', '--event-id', '999999', '--json')
    expect(missing.code).toBe(4)
  })

  it('an event-level item names its source task instance, in the table and in the JSON item', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1, state: 'success', emitted: true, workerLog: true})
      .build()
    const original = (await eventsOf(db.knex, world.ti('etl')))[0]!
    const run = original.source_run_id as string
    const json = await cli('replay-events', '--event-id', String(original.id), '--dry-run', '--json')
    expect((envelope(json) as {result: {items: unknown[]}}).result.items).toEqual([
      expect.objectContaining({
        source: `event ${original.id}`,
        event_id: original.id,
        source_dag_id: 'etl',
        source_run_id: run,
        source_task_id: 'produce',
        source_map_index: -1,
      }),
    ])
    const human = await cli('replay-events', '--event-id', String(original.id), '--dry-run')
    expect(human.code).toBe(0)
    const [header, , row] = human.stdout.split('\n')
    expect(header).toMatch(/^from +task instance +asset +outcome/)
    expect(row).toContain(`event ${original.id}`)
    expect(row).toContain(`etl/${run}/produce`)
  })

  it('an --event-id that does not exist is an item naming that id, with no asset', async () => {
    const result = await cli('replay-events', '--event-id', '999998', '--event-id', '999999', '--yes', '--json')
    expect(result.code).toBe(4)
    const items = (envelope(result) as {result: {items: Array<Record<string, unknown>>}}).result.items
    expect(items.map((item) => [item.event_id, item.outcome, item.asset])).toEqual([
      [999998, 'not_found', null],
      [999999, 'not_found', null],
    ])
    expect(items[0]).toMatchObject({source: 'event 999998', source_dag_id: null, new_event_id: null})
  })

  it('a mistyped --dag-id or --task-id of a missing-events selection is exit 4, never a clean zero', async () => {
    const world = await scenario(db.knex)
      .producer('typo_etl', {tasks: 2, outlets: 1, state: 'success', emitted: true, workerLog: true})
      .build()
    await db
      .knex('asset_event')
      .whereIn(
        'id',
        (await eventsOf(db.knex, world.ti('typo_etl', 'task_1'))).map((e) => e.id),
      )
      .delete()
    const before = await countRows(db.knex, 'asset_event')
    // A cron runs it with a window: the window does not make a wrong DAG an empty result.
    const dag = await cli('replay-events', '--dag-id', 'typo_elt', '--since', '2000-01-01', '--dry-run', '--json')
    expect(dag.code).toBe(4)
    expect(JSON.stringify(envelope(dag))).toContain('did you mean typo_etl?')
    const task = await cli('replay-events', '--dag-id', 'typo_etl', '--task-id', 'task_l', '--yes')
    expect(task.code).toBe(4)
    expect(task.stderr).toContain('no task is named "task_l" in DAG "typo_etl"')
    expect(await countRows(db.knex, 'asset_event')).toBe(before)
    // Spelled right, the same selection finds the lost events.
    const right = await cli('replay-events', '--dag-id', 'typo_etl', '--task-id', 'task_1', '--dry-run', '--json')
    expect(right.code).toBe(0)
    expect((envelope(right) as {result: {items: unknown[]}}).result.items).toHaveLength(1)
  })

  it('--event-id --dry-run reads would_replay and names no event id that does not exist', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1, state: 'success', emitted: true, workerLog: true})
      .build()
    const original = (await eventsOf(db.knex, world.ti('etl')))[0]!
    const before = await countRows(db.knex, 'asset_event')
    const result = await cli('replay-events', '--event-id', String(original.id), '--dry-run', '--json')
    expect(result.code).toBe(0)
    const out = envelope(result) as {result: {items: Array<{new_event_id: number | null; outcome: string}>}}
    expect(out.result.items).toEqual([expect.objectContaining({outcome: 'would_replay', new_event_id: null})])
    expect(await countRows(db.knex, 'asset_event')).toBe(before)
  })

  it('export → wipe → replay reproduces the events (new ids, same content); --skip-existing makes a second replay a no-op', async () => {
    await scenario(db.knex)
      .producer('etl', {tasks: 3, outlets: 2, state: 'success', emitted: true, workerLog: true})
      .build()
    const file = path.join(dir, `export-${Date.now()}.ndjson`)
    const exported = await cli('export-events', '--dag-id', 'etl', '--output', file, '--json')
    expect(envelope(exported)).toMatchObject({status: 0, result: {exported: 6}})
    const content = async () =>
      await db
        .knex('asset_event as e')
        .join('asset as a', 'a.id', 'e.asset_id')
        .orderBy(['a.name'])
        .select('a.name', 'e.extra', 'e.source_dag_id', 'e.source_run_id', 'e.source_task_id', 'e.source_map_index')
    const before = await content()
    const oldIds = await db.knex('asset_event').pluck('id')
    await db.knex('asset_event').delete()

    const replayed = await cli('replay-events', '--from-file', file, '--yes', '--json')
    expect(envelope(replayed)).toMatchObject({status: 0, result: {summary: {replayed: 6, events_created: 6}}})
    expect(await content()).toEqual(before)
    const newIds = await db.knex('asset_event').pluck('id')
    expect(newIds.filter((id) => oldIds.includes(id))).toEqual([])

    const again = await cli('replay-events', '--from-file', file, '--skip-existing', '--yes', '--json')
    expect(envelope(again)).toMatchObject({status: 0, result: {summary: {skipped_existing: 6, replayed: 0}}})
    expect(await countRows(db.knex, 'asset_event')).toBe(6)
  })

  it('a line naming an unknown asset is reported and skipped, the others replayed, exit 5', async () => {
    const world = await scenario(db.knex).producer('etl', {outlets: 1}).build()
    const file = path.join(dir, `unknown-${Date.now()}.ndjson`)
    const line = (name: string) =>
      JSON.stringify({
        asset: {name, uri: `s3://${name}`},
        extra: {},
        source_dag_id: null,
        source_run_id: null,
        source_task_id: null,
        timestamp: '2026-12-01T00:00:00Z',
      })
    const known = world.asset('etl.produce.out_1')
    await fs.writeFile(
      file,
      [
        JSON.stringify({asset: {name: known.name, uri: known.uri}, extra: {k: 1}, timestamp: '2026-12-01T00:00:00Z'}),
        line('nope.asset'),
      ].join('\n'),
    )
    const result = await cli('replay-events', '--from-file', file, '--yes', '--json')
    const out = envelope(result) as {
      status: number
      result: {
        summary: Record<string, number>
        items: Array<{outcome: string; source: string; error?: {message: string}}>
      }
    }
    expect(result.code).toBe(5)
    expect(out.result.summary).toMatchObject({replayed: 1, unknown_asset: 1})
    expect(out.result.items.find((i) => i.outcome === 'unknown_asset')).toMatchObject({
      source: `${file} line 2`,
      error: {message: expect.stringContaining('nope.asset')},
    })
  })

  it('a line emitted through aliases is linked to each known alias, queues their consumers, and warns about unknown ones', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1})
      .consumer('by_id', {on: ['etl']})
      .consumer('by_alias', {alias: 'lake.daily_alias'})
      .build()
    const file = path.join(dir, `alias-${Date.now()}.ndjson`)
    const asset = world.asset('etl.produce.out_1')
    await fs.writeFile(
      file,
      JSON.stringify({
        asset: {name: asset.name, uri: asset.uri},
        extra: {},
        timestamp: '2026-12-01T00:00:00Z',
        aliases: ['lake.daily_alias', 'gone.alias'],
      }) + '\n',
    )
    const result = await cli('replay-events', '--from-file', file, '--yes', '--json')
    const out = envelope(result) as {status: number; warnings: string[]; result: {items: Array<{new_event_id: number}>}}
    expect(out.status).toBe(0)
    expect(out.warnings.join()).toContain('gone.alias')
    const alias = await db.knex('asset_alias').where({name: 'lake.daily_alias'}).first()
    expect(await db.knex('asset_alias_asset_event').where({event_id: out.result.items[0]!.new_event_id})).toEqual([
      {alias_id: alias.id, event_id: out.result.items[0]!.new_event_id},
    ])
    // by_alias only through the alias (it is not scheduled on this asset), by_id by the asset's id.
    expect(
      await db.knex('asset_dag_run_queue').where({asset_id: asset.id}).orderBy('target_dag_id').pluck('target_dag_id'),
    ).toEqual(['by_alias', 'by_id'])
  })

  it('bad input: a malformed line names its number (exit 2, nothing written); bad flag combinations exit 2', async () => {
    const world = await scenario(db.knex)
      .producer('etl', {outlets: 1, state: 'success'})
      .consumer('report', {on: ['etl']})
      .build()
    const file = path.join(dir, `bad-${Date.now()}.ndjson`)
    const known = world.asset('etl.produce.out_1')
    await fs.writeFile(
      file,
      [
        JSON.stringify({asset: {name: known.name, uri: known.uri}, extra: {}, timestamp: '2026-12-01T00:00:00Z'}),
        '{"asset": {"name": "x"}}',
      ].join('\n'),
    )
    const footprint = await writeFootprint(db.knex)
    const bad = await cli('replay-events', '--from-file', file, '--yes')
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('line 2')
    expect(await writeFootprint(db.knex)).toEqual(footprint)

    // A misspelt key is refused, naming the line and the key, before anything is written.
    await fs.writeFile(
      file,
      JSON.stringify({asset: {name: known.name, uri: known.uri}, extras: {a: 1}, timestamp: '2026-12-01T00:00:00Z'}),
    )
    const misspelt = await cli('replay-events', '--from-file', file, '--yes')
    expect(misspelt.code).toBe(2)
    expect(misspelt.stderr).toContain('line 1: unknown key "extras"; nothing was replayed')
    expect(await writeFootprint(db.knex)).toEqual(footprint)

    for (const args of [
      ['--skip-existing', '--dag-id', 'etl'],
      ['--event-id', '1', '--dag-id', 'etl'],
      ['--event-id', 'x'],
    ]) {
      const result = await cli('replay-events', ...args, '--yes')
      expect(result.code).toBe(2)
    }

    expect((await cli('export-events', '--json')).code).toBe(2)
    expect(await writeFootprint(db.knex)).toEqual(footprint)
  })

  it('a killed replay resumed from its checkpoint ends with exactly one set of events', async () => {
    // etl's three task instances lost every event; the middle one (by id) is held so the replay stops there.
    const world = await scenario(db.knex)
      .producer('etl', {tasks: 3, outlets: 2, state: 'success', emitted: true, workerLog: true})
      .build()
    await loseEvents(world.assets('etl').map((a) => a.name))
    const ids = world
      .tis('etl')
      .map((t) => t.id)
      .sort()
    const checkpoint = path.join(dir, `ckpt-${Date.now()}.json`)
    await whileRowLocked(db.knex, ids[1]!, async (holder) => {
      const {child, finished} = startCli([
        'replay-events',
        '--database-url',
        db.url,
        '--dag-id',
        'etl',
        '--concurrency',
        '1',
        '--yes',
        '--checkpoint',
        checkpoint,
        '--lock-timeout',
        '60s',
      ])
      await waitUntilAppBlocked(db.knex, `airlock:replay:${ids[1]}`)
      child.kill('SIGKILL')
      await finished
      await holder.rollback()
    })

    const saved = JSON.parse(await fs.readFile(checkpoint, 'utf8')) as {cursor: string; done: number}
    expect(saved).toMatchObject({cursor: ids[0], done: 1})
    const resumed = await cli('replay-events', '--dag-id', 'etl', '--yes', '--checkpoint', checkpoint, '--json')
    expect(envelope(resumed)).toMatchObject({status: 0, result: {summary: {selected: 2, replayed: 2}}})
    for (const t of world.tis('etl')) expect(await eventsOf(db.knex, t)).toHaveLength(2)
  })
})
