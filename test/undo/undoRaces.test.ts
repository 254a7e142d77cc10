import type {Knex} from 'knex'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {compareVersions} from '../../src/airflow/revisions.js'
import {prepareDuplicateFix} from '../../src/audit/prepareDuplicateFix.js'
import type {AirflowSchema} from '../../src/airflow/schema.js'
import {fixtureVersions} from '../../src/worlds/fixtureSchema.js'
import {undoLogEvent} from '../../src/store/families/undo.js'
import type {CompleteStore} from '../../src/complete/completeWriter.js'
import type {AirflowDatabase} from '../../src/store/airflowDatabase.js'
import {undoItem, type UndoItemStore, type UndoResult} from '../../src/undo/undoItem.js'
import {undoTargetOf} from '../../src/undo/undoTarget.js'
import {createAssetTriggeredRuns, type CreatedRun} from '../conformance/scheduler.js'
import {airflowOf, completeOne, schemaOf} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {waitUntilAppBlocked, whileRowLocked} from '../support/locks.js'
import {dumpAvailable, restoreDump} from '../support/restoreDump.js'
import {scenario} from '../support/scenario.js'

/**
 * `airlock undo` racing what else writes the same rows, on real PostgreSQL: the scheduler's
 * asset-triggered run creation (test/conformance/scheduler.ts), a `complete` of the same task
 * instance, and another undo of the same audit row. Each race runs many rounds with the sessions
 * started together, and its worst interleavings are forced by holding the lock one side needs.
 * Every release line, and the real 3.0.0 dump.
 */
const versions: Array<(typeof fixtureVersions)[number] | 'dump'> = [...fixtureVersions]
if (await dumpAvailable()) versions.push('dump')

async function databaseFor(version: (typeof versions)[number]): Promise<TestDatabase> {
  // An undo, a scheduler, a complete, a lock holder and the observer at once.
  if (version !== 'dump') return createTestDatabase(version, 8)
  const db = await createTestDatabase('empty', 8)
  await restoreDump(db.knex)
  return db
}

/** etl.produce running with two outlets; `report` scheduled on both (so a completion queues it and readies it). */
const world = (knex: Knex) =>
  scenario(knex)
    .producer('etl', {outlets: 2})
    .consumer('report', {on: ['etl']})
    .build()

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
/** 0 to `max` ms, so the sessions of a round start in a different order each time. */
const jitter = (max: number) => sleep(Math.floor(Math.random() * (max + 1)))
const sorted = (ids: readonly number[]) => [...ids].sort((a, b) => a - b)

/** The `airlock` sessions of this database blocked on a lock, by the prefix of their tag. */
async function waitUntilBlockedCount(observer: Knex, prefix: string, count: number, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const {rows} = await observer.raw<{rows: Array<{n: number}>}>(
      `select count(*)::int as n from pg_stat_activity
        where datname = current_database() and application_name like ? and wait_event_type = 'Lock'`,
      [`${prefix}%`],
    )
    if (rows[0]!.n >= count) return
    if (Date.now() > deadline)
      throw new Error(`fewer than ${count} sessions "${prefix}…" blocked within ${timeoutMs} ms`)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** Waits until some session of this database waits for a lock `holderPid` holds; returns its pid. */
async function waitUntilBlockedBy(observer: Knex, holderPid: number, timeoutMs = 10_000): Promise<number> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const {rows} = await observer.raw<{rows: Array<{pid: number}>}>(
      `select pid from pg_stat_activity
        where datname = current_database() and ? = any(pg_blocking_pids(pid)) limit 1`,
      [holderPid],
    )
    if (rows[0]) return rows[0].pid
    if (Date.now() > deadline) throw new Error(`no session waited for backend ${holderPid} within ${timeoutMs} ms`)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

describe.each(versions)('airlock undo races on %s', (version) => {
  let db: TestDatabase
  let schema: AirflowSchema

  beforeAll(async () => {
    db = await databaseFor(version)
  })
  afterAll(async () => {
    await db?.drop()
  })

  /** A fresh world, and the store over it as one airlock process opens it. */
  async function fresh() {
    const w = await world(db.knex)
    schema = await schemaOf(db.knex)
    return {tiId: w.ti('etl').id, airflow: await airflowOf(db.knex)}
  }

  /** etl.produce completed through the protocol: its audit row's id and the event ids that row names. */
  async function completed(
    airflow: AirflowDatabase<CompleteStore>,
    tiId: string,
    options: {emitEvents?: boolean} = {},
  ) {
    const item = await completeOne(db.knex, tiId, {airflow, ...options})
    expect(item.result).toEqual({outcome: 'completed'})
    const logId = item.report!.log_id as number
    const eventIds = await eventIdsOf(logId)
    expect(eventIds).toHaveLength(options.emitEvents === false ? 0 : 2)
    return {logId, eventIds}
  }

  async function eventIdsOf(logId: number): Promise<number[]> {
    const row = (await db.knex('log').where({id: logId}).first()) as {extra: string}
    return sorted((JSON.parse(row.extra) as {airlock: {event_ids: number[]}}).airlock.event_ids)
  }

  /** `airlock undo --log-id N`, in-process, as prepareUndo runs each item. */
  async function undo(airflow: AirflowDatabase<UndoItemStore>, logId: number): Promise<UndoResult> {
    const [record] = await airflow.store.readAuditRecords(airflow.db.executor, [logId])
    const {result} = await undoItem(airflow, undoTargetOf(record!, undoLogEvent), {
      dryRun: false,
      plan: false,
      lockTimeoutMs: 5000,
      statementTimeoutMs: 30_000,
      airlockVersion: 'test',
    })
    return result
  }

  const existing = async (ids: readonly number[]) => sorted(await db.knex('asset_event').whereIn('id', ids).pluck('id'))
  /** Every event of etl.produce's try, whoever wrote it. */
  const eventsOfTry = async () => sorted(await db.knex('asset_event').where({source_task_id: 'produce'}).pluck('id'))
  const tiState = async (tiId: string) =>
    ((await db.knex('task_instance').where({id: tiId}).first()) as {state: string}).state
  const undoRows = async (logId: number) =>
    (await db.knex('log').where({event: undoLogEvent}).select('extra')).filter(
      (row: {extra: string}) => (JSON.parse(row.extra) as {airlock: {undoes: number}}).airlock.undoes === logId,
    )
  /** Event ids dagrun_asset_event links to a run (what a run consumed and still shows). */
  const linked = async (ids: readonly number[]) =>
    sorted(await db.knex('dagrun_asset_event').whereIn('event_id', ids).pluck('event_id'))

  /**
   * What must hold after an undo of `logId` (events `eventIds`) raced the scheduler, whatever the
   * interleaving: `undone` deleted exactly those events, no run the scheduler created took any of
   * them (dagrun_asset_event's ON DELETE CASCADE would hide it: the scheduler's own account of
   * what each run consumed is compared), and the task instance is running again; `consumed` and
   * `busy` wrote nothing: the events, the completion and every run's links are all still there.
   */
  async function expectConsistent(
    result: UndoResult,
    {tiId, logId, eventIds}: {tiId: string; logId: number; eventIds: number[]},
    runs: readonly CreatedRun[],
  ) {
    const taken = sorted(runs.flatMap((run) => run.eventIds).filter((id) => eventIds.includes(id)))
    switch (result.outcome) {
      case 'undone':
        expect(sorted(result.deletedEventIds)).toEqual(eventIds)
        expect(taken).toEqual([])
        expect(await existing(eventIds)).toEqual([])
        expect(await tiState(tiId)).toBe('running')
        expect(await undoRows(logId)).toHaveLength(1)
        break
      case 'consumed':
        expect(taken.length).toBeGreaterThan(0)
        expect(result.runs.map((r) => r.runId)).toEqual(
          expect.arrayContaining(runs.filter((run) => run.eventIds.length > 0).map((run) => run.runId)),
        )
        expect(await existing(eventIds)).toEqual(eventIds)
        expect(await tiState(tiId)).toBe('success')
        expect(await undoRows(logId)).toEqual([])
        break
      case 'busy':
        expect(await existing(eventIds)).toEqual(eventIds)
        expect(await tiState(tiId)).toBe('success')
        expect(await undoRows(logId)).toEqual([])
        break
      default:
        throw new Error(`undo beside the scheduler ended ${JSON.stringify(result)}`)
    }
    // Whatever a run took is still linked to it: nothing it consumed was deleted under it.
    expect(await linked(eventIds)).toEqual(taken)
  }

  describe('beside the scheduler creating asset-triggered runs', () => {
    it('an undo that commits after the scheduler read the queue, before it locked the DAG: no run takes the deleted events', async () => {
      const {tiId, airflow} = await fresh()
      const {logId, eventIds} = await completed(airflow, tiId)
      let result: UndoResult | undefined
      const runs = await createAssetTriggeredRuns(db.knex, schema, async () => {
        result = await undo(airflow, logId)
      })
      expect(result).toMatchObject({outcome: 'undone'})
      await expectConsistent(result!, {tiId, logId, eventIds}, runs)
      // The loop goes on with the queue rows it read before the undo. Before 3.2 it creates the
      // run anyway and it consumes nothing (the events' window is read after the lock); from 3.2
      // it locks the queue rows again and finds them gone: no run.
      expect(runs.map((run) => [run.dagId, run.eventIds])).toEqual(
        compareVersions(schema.behaviourVersion, '3.2.0') < 0 ? [['report', []]] : [],
      )
      expect(await db.knex('asset_dag_run_queue').count({n: '*'}).first()).toEqual({n: '0'})
    })

    it('while the scheduler holds the consumer DAG row creating its run, undo is busy and deletes nothing; once the run exists, consumed', async () => {
      const {tiId, airflow} = await fresh()
      const {logId, eventIds} = await completed(airflow, tiId)
      // The scheduler is held after its DAG row lock: a session holding the events' rows makes its
      // dagrun_asset_event insert (the foreign key's KEY SHARE) wait, with report's row locked.
      const blocker = await db.knex.transaction()
      let scheduler: Promise<CreatedRun[]> | undefined
      try {
        const {rows} = await blocker.raw<{rows: Array<{pid: number}>}>('select pg_backend_pid() as pid')
        await blocker.raw('select id from asset_event where id = any(?) for update', [eventIds])
        scheduler = createAssetTriggeredRuns(db.knex, schema)
        await waitUntilBlockedBy(db.knex, rows[0]!.pid)
        const {rows: held} = await db.knex.raw<{rows: unknown[]}>(
          `select 1 from dag where dag_id = 'report' for share skip locked`,
        )
        expect(held).toEqual([])

        const result = await undo(airflow, logId)
        expect(result).toMatchObject({outcome: 'busy'})
        await expectConsistent(result, {tiId, logId, eventIds}, [])
      } finally {
        await blocker.commit()
      }
      const runs = await scheduler
      expect(runs.map((run) => [run.dagId, sorted(run.eventIds)])).toEqual([['report', eventIds]])

      const after = await undo(airflow, logId)
      expect(after).toMatchObject({outcome: 'consumed'})
      await expectConsistent(after, {tiId, logId, eventIds}, runs)
    })

    it('while an undo holds the consumer DAG row (waiting for the task instance), the scheduler passes the DAG over; after it, nothing is queued', async () => {
      const {tiId, airflow} = await fresh()
      const {logId, eventIds} = await completed(airflow, tiId)
      const {pending, runs} = await whileRowLocked(db.knex, tiId, async () => {
        const pending = undo(airflow, logId)
        // Its events are deleted, its consumer DAG row held FOR SHARE; it waits for the row lock.
        await waitUntilAppBlocked(db.knex, `airlock:undo:${tiId}`)
        return {pending, runs: await createAssetTriggeredRuns(db.knex, schema)}
      })
      expect(runs).toEqual([])
      const result = await pending
      expect(result).toMatchObject({outcome: 'undone'})
      await expectConsistent(result, {tiId, logId, eventIds}, runs)
      expect(await createAssetTriggeredRuns(db.knex, schema)).toEqual([])
      expect(await db.knex('asset_dag_run_queue').count({n: '*'}).first()).toEqual({n: '0'})
    })

    it('raced round after round (started together, or the undo inside the scheduler loop): never a run that took a deleted event', async () => {
      const rounds = 24
      for (let round = 0; round < rounds; round++) {
        const {tiId, airflow} = await fresh()
        const {logId, eventIds} = await completed(airflow, tiId)
        let result: UndoResult
        let runs: CreatedRun[]
        if (round % 2 === 0) {
          // Both sessions started together, each after a few milliseconds of its own.
          ;[result, runs] = await Promise.all([
            jitter(6).then(() => undo(airflow, logId)),
            jitter(6).then(() => createAssetTriggeredRuns(db.knex, schema)),
          ])
        } else {
          // The undo starts once the scheduler read the queue, and runs beside its locks and inserts.
          let undoing: Promise<UndoResult> | undefined
          runs = await createAssetTriggeredRuns(db.knex, schema, async () => {
            undoing = jitter(4).then(() => undo(airflow, logId))
            await jitter(4)
          })
          result = await undoing!
        }
        await expectConsistent(result, {tiId, logId, eventIds}, runs)
      }
    })
  })

  describe('beside a complete of the same task instance', () => {
    /**
     * After an undo of the completion `first` raced a second `complete` (from running) of the
     * same task instance, the task instance and the events agree: success with exactly the
     * second completion's events (its audit row names them, they and its queue rows exist, the
     * first's are gone), or running with no event of the try and nothing queued.
     */
    async function expectAgreement(tiId: string, first: {logId: number; eventIds: number[]}) {
      const successRows = (await db
        .knex('log')
        .where({event: 'success', dag_id: 'etl'})
        .orderBy('id')
        .pluck('id')) as number[]
      expect(successRows[0]).toBe(first.logId)
      expect(await existing(first.eventIds)).toEqual([])
      const queued = await db.knex('asset_dag_run_queue').where({target_dag_id: 'report'}).count({n: '*'}).first()
      if ((await tiState(tiId)) === 'success') {
        expect(successRows).toHaveLength(2)
        const second = await eventIdsOf(successRows[1]!)
        expect(second).toHaveLength(2)
        expect(await eventsOfTry()).toEqual(second)
        expect(queued).toEqual({n: '2'})
      } else {
        expect(await tiState(tiId)).toBe('running')
        expect(successRows).toHaveLength(1)
        expect(await eventsOfTry()).toEqual([])
        expect(queued).toEqual({n: '0'})
      }
    }

    it('a complete while the undo waits for the row lock reads success and writes nothing; the undo then puts back running', async () => {
      const {tiId, airflow} = await fresh()
      const first = await completed(airflow, tiId)
      const {pending, second} = await whileRowLocked(db.knex, tiId, async () => {
        const pending = undo(airflow, first.logId)
        await waitUntilAppBlocked(db.knex, `airlock:undo:${tiId}`)
        return {pending, second: await completeOne(db.knex, tiId, {airflow})}
      })
      expect(second.result).toEqual({outcome: 'already_success'})
      expect(await pending).toMatchObject({outcome: 'undone', deletedEventIds: first.eventIds})
      expect(await tiState(tiId)).toBe('running')
      await expectAgreement(tiId, first)

      // Now the complete finds it running and completes it: its own events, its own row.
      expect((await completeOne(db.knex, tiId, {airflow})).result).toEqual({outcome: 'completed'})
      await expectAgreement(tiId, first)
    })

    it('a complete waiting for the row lock after the undo committed completes with its own events; the undo is not repeated', async () => {
      const {tiId, airflow} = await fresh()
      const first = await completed(airflow, tiId)
      expect(await undo(airflow, first.logId)).toMatchObject({outcome: 'undone'})
      const {pending, again} = await whileRowLocked(db.knex, tiId, async () => {
        const pending = completeOne(db.knex, tiId, {airflow})
        // Its events registered, uncommitted; it waits for the row lock.
        await waitUntilAppBlocked(db.knex, `airlock:complete:${tiId}`)
        return {pending, again: await undo(airflow, first.logId)}
      })
      expect(again).toMatchObject({outcome: 'already_undone'})
      expect((await pending).result).toEqual({outcome: 'completed'})
      await expectAgreement(tiId, first)
      expect(await tiState(tiId)).toBe('success')
    })

    it('raced round after round: the undo is never lost, and the state agrees with the events present', async () => {
      const rounds = 20
      for (let round = 0; round < rounds; round++) {
        const {tiId, airflow} = await fresh()
        const first = await completed(airflow, tiId)
        const [undone, second] = await Promise.all([
          jitter(2).then(() => undo(airflow, first.logId)),
          // Spread over about an undo's length: it reads before, during or after the undo's commit.
          jitter(20).then(() => completeOne(db.knex, tiId, {airflow})),
        ])
        // A complete only changes a running task instance, which it is only once the undo committed:
        // the undo cannot find it moved on.
        expect(undone).toMatchObject({outcome: 'undone', deletedEventIds: first.eventIds})
        expect(['completed', 'already_success']).toContain(second.result.outcome)
        expect(await tiState(tiId)).toBe(second.result.outcome === 'completed' ? 'success' : 'running')
        await expectAgreement(tiId, first)
      }
    })
  })

  describe('beside another undo of the same row', () => {
    it.each([
      ['with events', true],
      ['without events (emit off)', false],
    ])(
      'two undos of one completion %s, the second waiting for the row lock: one undone, the other already_undone',
      async (_, emitEvents) => {
        const {tiId, airflow} = await fresh()
        const first = await completed(airflow, tiId, {emitEvents})
        const {one, two} = await whileRowLocked(db.knex, tiId, async () => {
          const one = undo(airflow, first.logId)
          await waitUntilBlockedCount(db.knex, `airlock:undo:${tiId}`, 1)
          const two = undo(airflow, first.logId)
          await waitUntilBlockedCount(db.knex, `airlock:undo:${tiId}`, 2)
          return {one, two}
        })
        const outcomes = [await one, await two]
        expect(outcomes.map((r) => r.outcome).sort()).toEqual(['already_undone', 'undone'])
        expect(await undoRows(first.logId)).toHaveLength(1)
        expect(await tiState(tiId)).toBe('running')
        expect(await existing(first.eventIds)).toEqual([])
      },
    )

    it('two undos of one audit-events --fix, the second inserting the same events while the first has not committed: one undone, the other already_undone', async () => {
      const {tiId, airflow} = await fresh()
      const {eventIds} = await completed(airflow, tiId)
      // A duplicate of the first event, removed by --fix: its audit row is what is undone twice.
      const original = (await db.knex('asset_event').where({id: eventIds[0]}).first()) as Record<string, unknown>
      const [dup] = await db
        .knex('asset_event')
        .insert({...original, id: undefined})
        .returning<Array<{id: number}>>('id')
      const fix = prepareDuplicateFix(airflow, [{kept: eventIds[0]!, extras: [dup!.id], consumed: 0}], {
        dryRun: false,
        lockTimeoutMs: 5000,
        statementTimeoutMs: 30_000,
        airlockVersion: 'test',
      })
      await fix.run({shouldStop: () => false, onItem: () => {}})
      expect(await existing([dup!.id])).toEqual([])
      const fixRow = (await db.knex('log').where({event: 'airlock.audit-events.fix'}).first()) as {id: number}

      // The first undo has put the event back and waits to write its audit row (the log table
      // held in SHARE mode, which lets reads through); the second inserts the same id and waits
      // for the first.
      const holder = await db.knex.transaction()
      let one: Promise<UndoResult>
      let two: Promise<UndoResult>
      try {
        await holder.raw('lock table log in share mode')
        one = undo(airflow, fixRow.id)
        await waitUntilBlockedCount(db.knex, `airlock:undo:log-${fixRow.id}`, 1)
        two = undo(airflow, fixRow.id)
        await waitUntilBlockedCount(db.knex, `airlock:undo:log-${fixRow.id}`, 2)
      } finally {
        await holder.commit()
      }
      const outcomes = [await one!, await two!]
      expect(outcomes.map((r) => r.outcome).sort(), JSON.stringify(outcomes)).toEqual(['already_undone', 'undone'])
      expect(await undoRows(fixRow.id)).toHaveLength(1)
      expect(await existing([dup!.id])).toEqual([dup!.id])

      expect(await undo(airflow, fixRow.id)).toMatchObject({outcome: 'already_undone'})
    })

    it('raced round after round: exactly one undo row, the other already_undone', async () => {
      for (let round = 0; round < 10; round++) {
        const {tiId, airflow} = await fresh()
        const first = await completed(airflow, tiId, {emitEvents: round % 2 === 0})
        const results = await Promise.all([
          jitter(3).then(() => undo(airflow, first.logId)),
          jitter(3).then(() => undo(airflow, first.logId)),
        ])
        expect(results.map((r) => r.outcome).sort(), JSON.stringify(results)).toEqual(['already_undone', 'undone'])
        expect(await undoRows(first.logId)).toHaveLength(1)
        expect(await tiState(tiId)).toBe('running')
      }
    })
  })
})
