import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import type {Knex} from 'knex'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {fixtureVersions} from '../../src/worlds/fixtureSchema.js'
import {createAssetTriggeredRuns} from '../conformance/scheduler.js'
import {envelope, runCli} from '../support/cli.js'
import {completeOne, schemaOf} from '../support/complete.js'
import {waitUntilAppBlocked, whileRowLocked} from '../support/locks.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {dumpAvailable, restoreDump} from '../support/restoreDump.js'
import {scenario} from '../support/scenario.js'

/**
 * `airlock undo`: a write taken back exactly, while nothing downstream has acted on it, and
 * refused with the evidence when something has. Every release line, and the real 3.0.0 dump.
 */
const versions: Array<(typeof fixtureVersions)[number] | 'dump'> = [...fixtureVersions]
if (await dumpAvailable()) versions.push('dump')

async function databaseFor(version: (typeof versions)[number]): Promise<TestDatabase> {
  if (version !== 'dump') return createTestDatabase(version, 4)
  const db = await createTestDatabase('empty', 4)
  await restoreDump(db.knex)
  return db
}

/** etl.produce running with two outlets; `report` scheduled on both (so the write queues it). */
const world = (knex: Knex) =>
  scenario(knex)
    .producer('etl', {outlets: 2})
    .producer('other', {outlets: 1, state: 'success'})
    .consumer('report', {on: ['etl']})
    .build()

/**
 * Every row of every table but the audit log, as text, per table: the database "byte for byte"
 * as far as rows go (sequences move on, as after any rolled-back insert).
 */
async function snapshot(knex: Knex): Promise<Record<string, string[]>> {
  const {rows: tables} = await knex.raw<{rows: Array<{name: string}>}>(
    `select table_name as name from information_schema.tables
      where table_schema = current_schema() and table_type = 'BASE TABLE' and table_name not in ('log', 'alembic_version')
      order by 1`,
  )
  const out: Record<string, string[]> = {}
  for (const {name} of tables) {
    const {rows} = await knex.raw<{rows: Array<{r: string}>}>(`select to_jsonb(t)::text as r from ?? as t`, [name])
    out[name] = rows.map((row) => row.r).sort()
  }
  return out
}

/** snapshot() read inside a transaction (what it will have committed). */
const snapshotIn = (trx: Knex.Transaction) => snapshot(trx)

describe.each(versions)('airlock undo on %s', (version) => {
  let db: TestDatabase
  const cli = (command: string, ...args: string[]) => runCli([command, '--database-url', db.url, ...args])
  const undo = async (...args: string[]) => {
    const result = await cli('undo', '--json', '--yes', ...args)
    return {
      code: result.code,
      out: envelope(result) as {result: {items: Array<Record<string, unknown>>; summary: Record<string, number>}},
      result,
    }
  }
  /** complete's item for etl.produce, with its log_id. */
  const complete = async (...args: string[]) => {
    const result = await cli('complete', '--ti-id', (await produce()).id, '--json', '--yes', ...args)
    expect(result.code, result.stderr).toBe(0)
    const item = (envelope(result) as {result: {items: Array<{log_id: number; outcome: string}>}}).result.items[0]!
    expect(item.outcome).toBe('completed')
    return item
  }
  const produce = async () =>
    (await db.knex('task_instance').where({dag_id: 'etl', task_id: 'produce'}).first()) as {
      id: string
      state: string
      updated_at: Date
    }

  beforeAll(async () => {
    db = await databaseFor(version)
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('complete, then undo: every row of every table is as before the complete (the two audit rows aside)', async () => {
    await world(db.knex)
    const before = await snapshot(db.knex)
    const {log_id: logId} = await complete()
    expect(await snapshot(db.knex)).not.toEqual(before)

    const {code, out} = await undo('--log-id', String(logId))
    expect(code).toBe(0)
    expect(out.result.items).toEqual([
      expect.objectContaining({log_id: logId, command: 'complete', outcome: 'undone', deleted_event_ids: [1, 2]}),
    ])
    expect(await snapshot(db.knex)).toEqual(before)
    // `report` was ready with both of etl's events queued; it is not once they are gone.
    expect(out.result.items[0]!.lost_readiness).toEqual(['report'])
    // The undo's own audit row names what it took back.
    const [row] = await db.knex('log').where({event: 'airlock.undo'})
    expect(JSON.parse(row.extra as string)).toMatchObject({
      airlock: {command: 'undo', undoes: logId, undone_command: 'complete', deleted_event_ids: [1, 2]},
    })
  })

  it('--plan, --dry-run and the write say the same downstream: the consumers as after the undo, and the readiness it takes', async () => {
    const w = await world(db.knex)
    const {log_id: logId} = await complete()
    // Another producer's event after airlock's, on one of the two assets: before 3.4 its row is
    // kept, so one of report's two assets stays queued after the undo.
    const [asset] = w.assets('etl')
    const [other] = await db
      .knex('asset_event')
      .insert({asset_id: asset!.id, extra: '{}', timestamp: new Date(Date.now() + 1000)})
      .returning('id')
    if (version === '3.4')
      await db.knex('asset_dag_run_queue').insert({
        asset_id: asset!.id,
        target_dag_id: 'report',
        created_at: new Date(),
        asset_event_id: (other as {id: number}).id,
      })
    const pick = (item: Record<string, unknown>) => ({
      downstream: item.downstream,
      lost_readiness: item.lost_readiness,
      deleted_queue_rows: item.deleted_queue_rows,
      kept_queue_rows: item.kept_queue_rows,
    })
    const plan = await undo('--log-id', String(logId), '--plan')
    const dry = await undo('--log-id', String(logId), '--dry-run')
    const write = await undo('--log-id', String(logId))
    expect([plan.code, dry.code, write.code]).toEqual([0, 0, 0])
    const written = pick(write.out.result.items[0]!)
    expect(pick(plan.out.result.items[0]!)).toEqual(written)
    expect(pick(dry.out.result.items[0]!)).toEqual(written)
    // What the write left is what they said: report waits for the asset whose row went.
    expect(written.lost_readiness).toEqual(['report'])
    expect(written.downstream).toEqual([
      expect.objectContaining({dag_id: 'report', ready: false, waiting_for_count: 1, satisfied_count: 1}),
    ])
  })

  it('a heartbeat between the registration and the lock: the completion registers again, and undo restores the row the heartbeat left', async () => {
    const w = await world(db.knex)
    const target = w.ti('etl')
    let heartbeat = ''
    const result = await whileRowLocked(db.knex, target.id, async (holder) => {
      const completion = completeOne(db.knex, target.id)
      // Registered (its before-image read) and waiting for the row lock: the worker heartbeats.
      await waitUntilAppBlocked(db.knex, `airlock:complete:${target.id}`)
      const [row] = (
        await holder.raw<{rows: Array<{updated_at: string}>}>(
          `update task_instance set last_heartbeat_at = clock_timestamp(), updated_at = clock_timestamp() where id = ? returning updated_at::text`,
          [target.id],
        )
      ).rows
      heartbeat = row!.updated_at
      const before = await snapshotIn(holder)
      await holder.commit()
      return {completion: await completion, before}
    })
    expect(result.completion.result).toEqual({outcome: 'completed'})
    expect(result.completion.attempts).toBeGreaterThan(1)
    const logId = (result.completion.report as {log_id: number}).log_id
    const [row] = await db.knex('log').where({id: logId})
    const image = (JSON.parse(row.extra as string) as {airlock: {before: {task_instance: {updated_at: string}}}})
      .airlock.before.task_instance
    expect(new Date(image.updated_at).toISOString()).toBe(new Date(heartbeat).toISOString())
    expect((await undo('--log-id', String(logId))).code).toBe(0)
    expect(await snapshot(db.knex)).toEqual(result.before)
  })

  it("records a compact, versioned before-image in complete's audit row", async () => {
    const w = await world(db.knex)
    const {log_id: logId} = await complete()
    const [row] = await db.knex('log').where({id: logId})
    const extra = JSON.parse(row.extra as string) as {airlock: {before: Record<string, unknown>}}
    const tiId = w.ti('etl').id
    expect(extra.airlock.before).toMatchObject({
      version: 1,
      task_instance: {id: tiId, state: 'running', try_number: 1, end_date: null, next_kwargs_set: false},
    })
    // The queue rows it created and what it left are told by the row version (xmin) its
    // transaction stamped on them and on this row: nothing else to record.
    const {rows: versions} = await db.knex.raw<{rows: Array<{same: boolean}>}>(
      `select q.xmin = l.xmin as same from asset_dag_run_queue q, log l where l.id = ? order by q.asset_id`,
      [logId],
    )
    expect(versions).toEqual(w.assets('etl').map(() => ({same: true})))
    expect(w.assets('etl')).toHaveLength(2)
    expect((row.extra as string).length).toBeLessThan(1000)
  })

  it('refuses an undo whose events a run consumed, naming the run; nothing is written', async () => {
    await world(db.knex)
    const {log_id: logId} = await complete()
    const runs = await createAssetTriggeredRuns(db.knex, await schemaOf(db.knex))
    expect(runs.map((r) => r.dagId)).toEqual(['report'])
    const before = await snapshot(db.knex)
    const logs = await db.knex('log').count({n: '*'}).first()

    const {code, out} = await undo('--log-id', String(logId))
    expect(code).toBe(3)
    const [item] = out.result.items
    expect(item).toMatchObject({outcome: 'consumed', undo_log_id: null})
    expect(item!.consuming_runs).toEqual(
      expect.arrayContaining([expect.objectContaining({dag_id: 'report', run_id: runs[0]!.runId})]),
    )
    expect(item!.detail).toContain(runs[0]!.runId)
    expect(await snapshot(db.knex)).toEqual(before)
    expect(await db.knex('log').count({n: '*'}).first()).toEqual(logs)
  })

  /** report ran on the completion's events (audit was paused meanwhile); audit still has them queued. */
  const partlyConsumed = async () => {
    await scenario(db.knex)
      .producer('etl', {outlets: 2})
      .producer('other', {outlets: 1, state: 'success'})
      .consumer('report', {on: ['etl']})
      .consumer('audit', {on: ['etl']})
      .build()
    const {log_id: logId} = await complete()
    await db.knex('dag').where({dag_id: 'audit'}).update({is_paused: true})
    const runs = await createAssetTriggeredRuns(db.knex, await schemaOf(db.knex))
    await db.knex('dag').where({dag_id: 'audit'}).update({is_paused: false})
    expect(runs.map((r) => r.dagId)).toEqual(['report'])
    return {logId, runId: runs[0]!.runId}
  }
  const queueRows = async () =>
    (
      await db.knex.raw<{rows: Array<{r: string}>}>(
        `select to_jsonb(q)::text as r from asset_dag_run_queue q order by target_dag_id, asset_id`,
      )
    ).rows.map((row) => row.r)

  it('a write one consumer ran off: consumed, and the consumers its events are still queued for are listed', async () => {
    const {logId, runId} = await partlyConsumed()
    const assets = (await db.knex('asset_event').whereIn('id', [1, 2]).orderBy('asset_id')).map(
      (e: {asset_id: number}) => e.asset_id,
    )
    const before = await snapshot(db.knex)
    const {code, out} = await undo('--log-id', String(logId))
    expect(code).toBe(3)
    expect(out.result.items[0]).toMatchObject({outcome: 'consumed', still_queued: {audit: assets}})
    expect(out.result.items[0]!.detail).toContain(`report run ${runId}`)
    expect(out.result.items[0]!.detail).toContain('still queued for audit')
    // The plan says the same; the people's output names them.
    const plan = await undo('--log-id', String(logId), '--plan')
    expect(plan.out.result.items[0]).toMatchObject({outcome: 'consumed', still_queued: {audit: assets}})
    const human = await cli('undo', '--log-id', String(logId), '--yes')
    expect(human.stdout).toContain('Still queued')
    expect(human.stdout).toContain(`audit (log row ${logId})`)
    expect(await snapshot(db.knex)).toEqual(before)
  })

  it('--withdraw-queued: exactly the rows still queued go (plan = dry run = write), in an audit row undo takes back', async () => {
    const {logId, runId} = await partlyConsumed()
    const queued = await queueRows()
    expect(queued).not.toEqual([])
    const runsBefore = await db.knex('dag_run').orderBy('id')
    const plan = await undo('--log-id', String(logId), '--withdraw-queued', '--plan')
    const dry = await undo('--log-id', String(logId), '--withdraw-queued', '--dry-run')
    expect(await queueRows()).toEqual(queued)
    const write = await undo('--log-id', String(logId), '--withdraw-queued')
    expect([plan.code, dry.code, write.code]).toEqual([3, 3, 3])
    const item = write.out.result.items[0]!
    expect(item).toMatchObject({
      outcome: 'withdrawn',
      consuming_runs: expect.arrayContaining([expect.objectContaining({run_id: runId})]),
    })
    const pick = (i: Record<string, unknown>) => ({rows: i.withdrawn_queue_rows, kept: i.kept_queue_rows})
    expect(pick(plan.out.result.items[0]!)).toEqual(pick(item))
    expect(pick(dry.out.result.items[0]!)).toEqual(pick(item))
    expect([plan.out.result.items[0]!.outcome, dry.out.result.items[0]!.outcome]).toEqual([
      'would_withdraw',
      'would_withdraw',
    ])
    expect(Object.keys(item.withdrawn_queue_rows as object)).toEqual(['audit'])
    expect(item.detail).toContain('mark the run failed')
    // The queue is empty; the run that consumed the events stands.
    expect(await queueRows()).toEqual([])
    expect(await db.knex('dag_run').orderBy('id')).toEqual(runsBefore)
    const withdrawLogId = item.withdraw_log_id as number
    const [row] = await db.knex('log').where({id: withdrawLogId})
    expect(row.event).toBe('airlock.undo.withdraw-queued')
    const extra = JSON.parse(row.extra as string) as {airlock: {withdraws: number; before: {queue_rows: unknown[]}}}
    expect(extra.airlock.withdraws).toBe(logId)
    expect(extra.airlock.before.queue_rows).toHaveLength(queued.length)
    // The write itself stays consumed (nothing left to withdraw), not undone.
    const again = await undo('--log-id', String(logId), '--withdraw-queued')
    expect(again.out.result.items[0]).toMatchObject({outcome: 'consumed', still_queued: {}})

    // Undoing the withdrawal puts back exactly the rows it took.
    const back = await undo('--log-id', String(withdrawLogId))
    expect(back.code).toBe(0)
    expect(back.out.result.items[0]).toMatchObject({
      outcome: 'undone',
      command: 'undo --withdraw-queued',
      restored_queue_rows: item.withdrawn_queue_rows,
    })
    expect(await queueRows()).toEqual(queued)
  })

  it('undo of a withdrawal whose DAG consumed the events since: changed, nothing written', async () => {
    const {logId} = await partlyConsumed()
    const write = await undo('--log-id', String(logId), '--withdraw-queued')
    const withdrawLogId = write.out.result.items[0]!.withdraw_log_id as number
    // audit runs on the events anyway (a run of it consumed them: its condition met by later rows).
    const [run] = await db.knex('dag_run').where({dag_id: 'report'})
    const [auditRun] = await db
      .knex('dag_run')
      .insert({...run, id: undefined, dag_id: 'audit', run_id: 'asset_triggered__audit'})
      .returning('id')
    await db.knex('dagrun_asset_event').insert({dag_run_id: (auditRun as {id: number}).id, event_id: 1})
    const before = await snapshot(db.knex)
    const back = await undo('--log-id', String(withdrawLogId))
    expect(back.code).toBe(3)
    expect(back.out.result.items[0]).toMatchObject({outcome: 'changed'})
    expect(back.out.result.items[0]!.detail).toContain('a run of it consumed the events since')
    expect(await snapshot(db.knex)).toEqual(before)
  })

  it("keeps a queue row another producer's pending event still needs (before 3.4: one row per asset and DAG)", async () => {
    const w = await world(db.knex)
    const {log_id: logId} = await complete()
    const [asset] = w.assets('etl')
    // Another producer's event of the same asset, after airlock's: before 3.4 its queue insert
    // found airlock's row there (ON CONFLICT DO NOTHING), so that row is its too.
    const [other] = await db
      .knex('asset_event')
      .insert({asset_id: asset!.id, extra: '{}', timestamp: new Date(Date.now() + 1000)})
      .returning('id')
    const otherId = (other as {id: number}).id
    if (version === '3.4')
      await db
        .knex('asset_dag_run_queue')
        .insert({asset_id: asset!.id, target_dag_id: 'report', created_at: new Date(), asset_event_id: otherId})

    const {code, out} = await undo('--log-id', String(logId))
    expect(code).toBe(0)
    const rows = await db.knex('asset_dag_run_queue').where({target_dag_id: 'report'}).orderBy('asset_id')
    if (version === '3.4') {
      // One row per event: airlock's went with its events, the other's stays.
      expect(rows.map((r: {asset_event_id: number}) => r.asset_event_id)).toEqual([otherId])
      expect(out.result.items[0]!.kept_queue_rows).toEqual({})
    } else {
      expect(rows.map((r: {asset_id: number}) => r.asset_id)).toEqual([asset!.id])
      // With the time the other event's own insert would have given it: the scheduler's triggered
      // date is the newest created_at, and it takes the events stamped up to it.
      const {rows: same} = await db.knex.raw<{rows: Array<{same: boolean}>}>(
        `select (q.created_at = e.timestamp) as same from asset_dag_run_queue q, asset_event e where q.target_dag_id = 'report' and e.id = ?`,
        [otherId],
      )
      expect(same).toEqual([{same: true}])
      expect(out.result.items[0]).toMatchObject({
        kept_queue_rows: {report: [asset!.id]},
        deleted_queue_rows: {report: [w.assets('etl')[1]!.id]},
      })
    }
  })

  // dag.timetable_partitioned exists from 3.2.
  it.skipIf(version === '3.0' || version === '3.1' || version === 'dump')(
    'refuses (not_undoable) a write whose events reach a consumer with a partitioned timetable (3.2+), whose partition path undo cannot lock',
    async () => {
      await world(db.knex)
      const {log_id: logId} = await complete()
      await db.knex('dag').where({dag_id: 'report'}).update({timetable_partitioned: true})
      const before = await snapshot(db.knex)
      const {code, out} = await undo('--log-id', String(logId))
      expect(code).toBe(3)
      expect(out.result.items[0]).toMatchObject({outcome: 'not_undoable'})
      expect(out.result.items[0]!.detail).toContain('report has a partitioned timetable')
      expect(await snapshot(db.knex)).toEqual(before)
    },
  )

  it('refuses once the scheduler went on from the success (a downstream task scheduled since): changed, nothing written', async () => {
    await scenario(db.knex)
      .producer('etl', {
        tasks: ['load', 'report'],
        outlets: 1,
        state: {load: 'running', report: null},
        downstream: {load: ['report']},
      })
      .build()
    const load = (await db.knex('task_instance').where({task_id: 'load'}).first()) as {id: string}
    const result = await cli('complete', '--ti-id', load.id, '--json', '--yes')
    expect(result.code, result.stderr).toBe(0)
    const logId = (envelope(result) as {result: {items: Array<{log_id: number}>}}).result.items[0]!.log_id
    // The scheduler saw load succeed and scheduled report.
    await db
      .knex('task_instance')
      .where({task_id: 'report'})
      .update({state: 'scheduled', updated_at: db.knex.raw('clock_timestamp()')})
    const plan = await undo('--log-id', String(logId), '--plan')
    expect(plan.out.result.items[0]).toMatchObject({outcome: 'changed'})
    const {code, out} = await undo('--log-id', String(logId))
    expect(code).toBe(3)
    expect(out.result.items[0]).toMatchObject({outcome: 'changed'})
    expect(out.result.items[0]!.detail).toContain('report[-1] is scheduled since')
    expect((await db.knex('task_instance').where({task_id: 'load'}).first()).state).toBe('success')
  })

  it('refuses a task instance that moved on since (changed), and writes nothing', async () => {
    await world(db.knex)
    const {log_id: logId} = await complete()
    // Someone marked it failed in the UI after airlock completed it.
    await db
      .knex('task_instance')
      .where({dag_id: 'etl', task_id: 'produce'})
      .update({state: 'failed', updated_at: new Date()})
    const events = await db.knex('asset_event').count({n: '*'}).first()

    const {code, out} = await undo('--log-id', String(logId))
    expect(code).toBe(3)
    expect(out.result.items[0]).toMatchObject({outcome: 'changed'})
    expect(out.result.items[0]!.detail).toMatch(/written to since airlock completed it \(now failed/)
    expect(await db.knex('asset_event').count({n: '*'}).first()).toEqual(events)
    expect((await produce()).state).toBe('failed')
  })

  it('a second undo of the same row is already_undone (exit 0); an undo row is not undone (exit 3); a row airlock did not write is not_airlock', async () => {
    await world(db.knex)
    const {log_id: logId} = await complete()
    expect((await undo('--log-id', String(logId))).code).toBe(0)
    const again = await undo('--log-id', String(logId))
    expect(again.code).toBe(0)
    expect(again.out.result.items[0]).toMatchObject({outcome: 'already_undone'})

    const [undoRow] = await db.knex('log').where({event: 'airlock.undo'})
    const ofUndo = await undo('--log-id', String(undoRow.id))
    expect(ofUndo.code).toBe(3)
    expect(ofUndo.out.result.items[0]).toMatchObject({outcome: 'not_undoable'})
    expect(ofUndo.out.result.items[0]!.detail).toContain('an undo is not undone')

    const [airflows] = await db
      .knex('log')
      .insert({dttm: new Date(), event: 'success', dag_id: 'etl', extra: '{"host_name": "api"}'})
      .returning('id')
    const theirs = await undo('--log-id', String((airflows as {id: number}).id), '--log-id', '999999')
    expect(theirs.code).toBe(4)
    expect(theirs.out.result.items.map((i) => i.outcome).sort()).toEqual(['not_airlock', 'not_found'])
  })

  it('takes back a replay (its events and the queue rows it created) and an audit-events --fix (its events come back whole)', async () => {
    const w = await world(db.knex)
    await complete()
    const [eventRow] = await db.knex('asset_event').where({source_task_id: 'produce'}).orderBy('id')
    const replay = await cli('replay-events', '--event-id', String(eventRow.id), '--json', '--yes')
    expect(replay.code, replay.stderr).toBe(0)
    const replayed = (envelope(replay) as {result: {items: Array<{log_id: number; new_event_id: number}>}}).result
      .items[0]!
    const {code, out} = await undo('--log-id', String(replayed.log_id))
    expect(code).toBe(0)
    expect(out.result.items[0]).toMatchObject({command: 'replay-events', deleted_event_ids: [replayed.new_event_id]})
    expect(await db.knex('asset_event').where({id: replayed.new_event_id})).toEqual([])

    // A duplicate the fix removes, then puts back exactly.
    const [dup] = await db
      .knex('asset_event')
      .insert({...eventRow, id: undefined})
      .returning('*')
    const beforeFix = await snapshot(db.knex)
    const fix = await cli('audit-events', '--fix', '--no-dry-run', '--yes', '--json', '--since', '1h')
    // Exit 6: the audit still reports what it found (the duplicate it removed).
    expect(fix.code, fix.stderr).toBe(6)
    expect(await db.knex('asset_event').where({id: (dup as {id: number}).id})).toEqual([])
    const [fixRow] = await db.knex('log').where({event: 'airlock.audit-events.fix'})
    const undone = await undo('--log-id', String(fixRow.id))
    expect(undone.code).toBe(0)
    expect(undone.out.result.items[0]).toMatchObject({restored_event_ids: [(dup as {id: number}).id]})
    expect(await snapshot(db.knex)).toEqual(beforeFix)
    expect(w.assets('etl')).toHaveLength(2)
  })

  it('undoes what a result file names, newest first, and selects by --since with --by-actor', async () => {
    await world(db.knex)
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'airlock-undo-'))
    const file = path.join(dir, 'complete.ndjson')
    const result = await cli('complete', '--dag-id', 'etl', '--yes', '--actor', 'alice', '--output', file)
    expect(result.code, result.stderr).toBe(0)
    const dry = await undo('--from-file', file, '--dry-run')
    expect(dry.out.result.items[0]).toMatchObject({outcome: 'would_undo', undo_log_id: null})
    expect((await produce()).state).toBe('success')

    const none = await undo('--since', '1h', '--by-actor', 'bob', '--fail-if-empty')
    expect(none.code).toBe(4)
    const mine = await undo('--since', '1h', '--by-actor', 'alice')
    expect(mine.code).toBe(0)
    expect(mine.out.result.items.map((i) => i.outcome)).toEqual(['undone'])
    expect((await produce()).state).toBe('running')
  })

  it('complete --continue-run, then undo: the cleared task instances (old ids, notes, reschedules, archive) and the run are as before', async () => {
    const w = await scenario(db.knex)
      .producer('etl', {
        tasks: ['extract', 'load', 'report', 'notify', 'archive'],
        outlets: 1,
        state: {extract: 'success', load: 'failed', report: 'upstream_failed', notify: 'failed', archive: 'success'},
        downstream: {extract: ['load'], load: ['report', 'notify', 'archive']},
        mappedTasks: {report: [0, 1]},
        retries: {notify: 2, report: 1},
        runState: 'failed',
      })
      .build()
    const notify = w.ti('etl', 'notify')
    const now = new Date()
    await db
      .knex('task_reschedule')
      .insert({ti_id: notify.id, start_date: now, end_date: now, duration: 1, reschedule_date: now})
    await db
      .knex('task_instance_note')
      .insert({ti_id: notify.id, user_id: 'ops', content: 'paged', created_at: now, updated_at: now})
    const before = await snapshot(db.knex)

    const result = await cli(
      'complete',
      '--ti-id',
      w.ti('etl', 'load').id,
      '--from-state',
      'failed',
      '--continue-run',
      '--json',
      '--yes',
    )
    expect(result.code, result.stderr).toBe(0)
    const item = (envelope(result) as {result: {items: Array<{log_id: number; continue_run: {cleared: unknown[]}}>}})
      .result.items[0]!
    expect(item.continue_run.cleared).toHaveLength(3)
    expect((await db.knex('dag_run').first()).state).toBe('queued')

    // The clear's image is put in by text: the row keeps the spacing airlock's readers look for.
    const [row] = await db.knex('log').where({id: item.log_id})
    expect(row.extra).toMatch(/^\{"host_name":"[^"]*","airlock":\{/)
    // Selected by time too (the window reads airlock's rows by that spacing).
    const {code, out} = await undo('--since', '1h')
    expect(code, JSON.stringify(out)).toBe(0)
    expect(out.result.items).toHaveLength(1)
    expect(out.result.items[0]).toMatchObject({command: 'complete --continue-run', outcome: 'undone'})
    expect(out.result.items[0]!.restored_cleared).toHaveLength(3)
    expect(await snapshot(db.knex)).toEqual(before)
  })

  it('refuses to undo a --continue-run whose run the scheduler already picked up (changed)', async () => {
    const w = await scenario(db.knex)
      .producer('etl', {
        tasks: ['load', 'report'],
        outlets: 1,
        state: {load: 'failed', report: 'upstream_failed'},
        downstream: {load: ['report']},
        runState: 'failed',
      })
      .build()
    const result = await cli(
      'complete',
      '--ti-id',
      w.ti('etl', 'load').id,
      '--from-state',
      'failed',
      '--continue-run',
      '--json',
      '--yes',
    )
    expect(result.code, result.stderr).toBe(0)
    const logId = (envelope(result) as {result: {items: Array<{log_id: number}>}}).result.items[0]!.log_id
    await db.knex('dag_run').update({state: 'running', updated_at: new Date()})
    const {code, out} = await undo('--log-id', String(logId))
    expect(code).toBe(3)
    expect(out.result.items[0]).toMatchObject({outcome: 'changed'})
    expect(out.result.items[0]!.detail).toContain('the run changed (state, now running')
    expect((await db.knex('task_instance').where({task_id: 'load'}).first()).state).toBe('success')
  })

  it('refuses bad selections before connecting (exit 2)', async () => {
    for (const args of [[], ['--log-id', '1', '--since', '1h'], ['--by-actor', 'alice']]) {
      const result = await runCli(['undo', '--database-url', db.url, '--json', ...args])
      expect(result.code, result.stdout).toBe(2)
    }
  })

  it('--from-file takes a result line of megabytes (a file from before the preview capped its lists)', async () => {
    await world(db.knex)
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'airlock-undo-'))
    const file = path.join(dir, 'complete.ndjson')
    expect((await cli('complete', '--dag-id', 'etl', '--yes', '--output', file)).code).toBe(0)
    const waiting = Array.from({length: 120_000}, (_, i) => `warehouse.orders.partition_${i}`)
    const lines = fs
      .readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .map((item) =>
        item.log_id ? {...item, downstream: [{dag_id: 'wide', ready: false, waiting_for: waiting}]} : item,
      )
    const wide = path.join(dir, 'wide.ndjson')
    fs.writeFileSync(wide, lines.map((line) => JSON.stringify(line)).join('\n') + '\n')
    expect(fs.statSync(wide).size).toBeGreaterThan(2 * 1024 * 1024)
    const dry = await undo('--from-file', wide, '--dry-run')
    expect(dry.code).toBe(0)
    expect(dry.out.result.items.map((i) => i.outcome)).toEqual(['would_undo'])
  })

  it('a --from-file that is a directory or not JSON lines: exit 2, named, nothing written', async () => {
    await world(db.knex)
    const before = await snapshot(db.knex)
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'airlock-undo-'))
    const notJson = path.join(dir, 'notes.txt')
    fs.writeFileSync(notJson, 'log 12 was wrong\n')
    for (const [file, says] of [
      [dir, 'is a directory'],
      [notJson, 'line 1 is not valid JSON'],
      [path.join(dir, 'missing.ndjson'), 'does not exist'],
    ] as const) {
      const result = await runCli(['undo', '--database-url', db.url, '--yes', '--from-file', file])
      expect(result.code, result.stderr).toBe(2)
      expect(result.stderr).toContain(says)
    }
    expect(await snapshot(db.knex)).toEqual(before)
  })

  it('asks before one undo too (it deletes rows): without --yes and no terminal, exit 2 and nothing written', async () => {
    await world(db.knex)
    const {log_id: logId} = await complete()
    const result = await runCli(['undo', '--database-url', db.url, '--json', '--log-id', String(logId)])
    expect(result.code).toBe(2)
    expect(JSON.stringify(envelope(result))).toContain('--yes')
    expect((await produce()).state).toBe('success')
    expect(await db.knex('log').where({event: 'airlock.undo'})).toEqual([])
  })
})
