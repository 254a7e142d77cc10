import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {EventAuditReport} from '../../src/cli/renderEventAudit.js'
import {envelope, runCli} from '../support/cli.js'
import {schemaOf} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario} from '../support/scenario.js'
import {createAssetTriggeredRuns, type CreatedRun, type PerEventIds} from '../conformance/scheduler.js'

/**
 * audit-events --fix committed inside the scheduler's window: after the scheduler's unlocked
 * queue read (`dags_needing_dagruns`) and before its DAG row lock. A fix that deletes a pending
 * duplicate there and commits releases the consumer DAG row before the scheduler asks for it, so
 * the DAG lock alone cannot keep the scheduler from linking an event id it read before the
 * delete: its `dagrun_asset_event` insert then fails on the foreign key (an IntegrityError
 * Airflow's retry does not retry).
 *
 * 3.2 (one queue row per asset): the read carries only triggered_date; the events are read after
 * the lock, so the fix may remove the extra. 3.4 (apache/airflow #70972, one row per event): the
 * read carries event ids. Which order main's `_create_dag_runs_asset_triggered` links them in
 * could not be read (docs/audit-events.md), so both are run: ids read again under the DAG lock
 * (the transcription's) and ids of the first read linked after it (the worse one).
 */
describe.each([
  ['3.2', 'under_lock'],
  ['3.4', 'under_lock'],
  ['3.4', 'before_lock'],
] as const)('audit-events --fix inside the scheduler window on %s, event ids %s', (version, perEventIds) => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase(version, 6)
  })
  afterAll(async () => db?.drop())

  const perEvent = version === '3.4'

  /** etl succeeded and emitted its outlet's event twice (a retried request); report takes it. A fresh world each time. */
  async function world() {
    await scenario(db.knex)
      .producer('etl', {tasks: 1, outlets: 1, state: 'success', emitted: true})
      .consumer('report', {on: ['etl'], condition: 'any'})
      .build()
    const [original] = await db.knex('asset_event').where({source_dag_id: 'etl'}).orderBy('id')
    const [copy] = await db
      .knex('asset_event')
      .insert({
        ...original,
        id: undefined,
        timestamp: db.knex.raw(`?::timestamptz + interval '1 second'`, [original.timestamp]),
      })
      .returning('id')
    // What each event's registration queued for report (3.4: one row per event, 3.2: per asset).
    for (const id of perEvent ? [original.id, copy.id] : [original.id]) {
      await db.knex('asset_dag_run_queue').insert({
        asset_id: original.asset_id,
        target_dag_id: 'report',
        created_at: new Date(),
        ...(perEvent ? {asset_event_id: id} : {}),
      })
    }
    return {kept: original.id as number, extra: copy.id as number}
  }

  const auditCli = async (...args: string[]) => {
    const result = await runCli(['audit-events', '--database-url', db.url, '--dag-id', 'etl', '--json', ...args])
    return (envelope(result) as {result: EventAuditReport}).result
  }

  const fixCli = async () => {
    const result = await runCli([
      'audit-events',
      '--database-url',
      db.url,
      '--dag-id',
      'etl',
      '--fix',
      '--no-dry-run',
      '--yes',
      '--json',
    ])
    return (envelope(result) as {result: EventAuditReport}).result.fix!
  }

  /** One scheduler step with the fix run, and committed, between its queue read and its DAG lock. */
  async function fixInsideWindow() {
    const schema = await schemaOf(db.knex)
    let fix: EventAuditReport['fix'] = null
    let schedulerError: unknown
    let runs: CreatedRun[] = []
    try {
      runs = await createAssetTriggeredRuns(
        db.knex,
        schema,
        async () => {
          fix = await fixCli()
        },
        {perEventIds: perEventIds satisfies PerEventIds},
      )
    } catch (error) {
      schedulerError = error
    }
    return {fix: fix as EventAuditReport['fix'], schedulerError, runs}
  }

  it("the audit's suggestion for the duplicate says when --fix leaves it (3.4: a queue row names it)", async () => {
    const {extra} = await world()
    const finding = (await auditCli()).findings.find((f) => f.event_id === extra)!
    expect(finding.class).toBe('duplicate')
    expect(finding.suggestion).toContain('airlock audit-events --fix removes it, unless a run can still take it')
    if (perEvent) expect(finding.suggestion).toContain('a queue row naming it')
    else expect(finding.suggestion).not.toContain('queue row')
  })

  it('the scheduler step never fails on an event the fix deleted, and no run takes one', async () => {
    const {kept, extra} = await world()
    const {fix, schedulerError, runs} = await fixInsideWindow()
    // The window: an IntegrityError here (foreign key of dagrun_asset_event) is the fix deleting
    // an event the scheduler had already read and went on to link.
    expect(schedulerError).toBeUndefined()
    const removed = fix!.groups.flatMap((group) => group.removed)
    const taken = runs.flatMap((run) => run.eventIds)
    expect(removed.filter((id) => taken.includes(id))).toEqual([])
    // Every event a run took still exists; the kept one always does.
    expect(await db.knex('asset_event').whereIn('id', taken).pluck('id')).toHaveLength(new Set(taken).size)
    expect(await db.knex('asset_event').where({id: kept})).toHaveLength(1)
    expect(runs).toHaveLength(1)
    if (perEvent) {
      // 3.4: a pending duplicate a queue row names is left, whichever order the scheduler has,
      // with its reason; the run takes it as Airflow would have.
      expect(fix).toMatchObject({removed: 0, refused_pending: 1})
      expect(fix!.groups[0]).toMatchObject({outcome: 'kept', refused_pending: [extra], pending_reason: 'queued'})
      expect(taken.sort()).toEqual([kept, extra].sort())
    } else {
      // 3.2: the run's events are read under the DAG lock: the extra is gone by then.
      expect(fix).toMatchObject({removed: 1, refused_pending: 0})
      expect(taken).toEqual([kept])
    }
  })

  it.runIf(perEvent)(
    'a 3.4 pending duplicate no queue row names is removed, the scheduler in its window or not',
    async () => {
      const {kept, extra} = await world()
      // report was not queued for the extra (paused when it was registered, or scheduled on the
      // asset after it): no scheduler read can carry its id.
      await db.knex('asset_dag_run_queue').where({asset_event_id: extra}).delete()
      const {fix, schedulerError, runs} = await fixInsideWindow()
      expect(schedulerError).toBeUndefined()
      expect(fix).toMatchObject({removed: 1, refused_pending: 0})
      expect(await db.knex('asset_event').where({id: extra})).toEqual([])
      expect(runs.map((run) => run.eventIds)).toEqual([[kept]])
    },
  )
})
