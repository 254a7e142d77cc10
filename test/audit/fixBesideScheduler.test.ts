import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {EventAuditReport} from '../../src/cli/renderEventAudit.js'
import {prepareDuplicateFix, type GroupFix} from '../../src/audit/prepareDuplicateFix.js'
import {envelope, runCli} from '../support/cli.js'
import {airflowOf, schemaOf} from '../support/complete.js'
import {createTestDatabase, type TestDatabase} from '../support/database.js'
import {scenario} from '../support/scenario.js'
import {createAssetTriggeredRuns} from '../conformance/scheduler.js'

/**
 * audit-events --fix decides under its own locks: beside the scheduler (the transcribed
 * asset-triggered step, test/conformance/scheduler.ts) it removes pending duplicates with every
 * consumer DAG row held, skips what the scheduler holds, and two fixers reading at different times
 * never remove the last event of a try. On 3.2 (one queue row per asset) and 3.4 (one per event),
 * where a pending duplicate a queue row names is left (`queued`), with the scheduler's event ids
 * read under its DAG lock and read before it (which order main has could not be read:
 * test/audit/fixInQueueWindow.test.ts runs the fix inside that window).
 */
describe.each([
  ['3.2', 'under_lock'],
  ['3.4', 'under_lock'],
  ['3.4', 'before_lock'],
] as const)('audit-events --fix on %s, scheduler event ids %s', (version, perEventIds) => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await createTestDatabase(version, 6)
  })
  afterAll(async () => db?.drop())

  const perEvent = version === '3.4'

  /** etl's `tasks` tasks succeeded and emitted their outlet's event twice (a retried request); report takes any of them. */
  async function world(tasks = 1) {
    const w = await scenario(db.knex)
      .producer('etl', {tasks, outlets: 1, state: 'success', emitted: true})
      .consumer('report', {on: ['etl'], condition: 'any'})
      .build()
    const pairs: Array<{kept: number; extra: number; assetId: number}> = []
    for (const ti of w.tis('etl')) {
      const [original] = await db.knex('asset_event').where({source_task_id: ti.task_id}).orderBy('id')
      const [copy] = await db
        .knex('asset_event')
        .insert({
          ...original,
          id: undefined,
          timestamp: db.knex.raw(`?::timestamptz + interval '1 second'`, [original.timestamp]),
        })
        .returning('id')
      pairs.push({kept: original.id, extra: copy.id, assetId: original.asset_id})
      // What each event's registration queued for report (3.4: one row per event, 3.2: per asset).
      for (const id of perEvent ? [original.id, copy.id] : [original.id]) {
        await db.knex('asset_dag_run_queue').insert({
          asset_id: original.asset_id,
          target_dag_id: 'report',
          created_at: new Date(),
          ...(perEvent ? {asset_event_id: id} : {}),
        })
      }
    }
    return {w, pairs}
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

  const fixGroups = async (groups: Array<{kept: number; extras: number[]}>) => {
    const prepared = prepareDuplicateFix(
      await airflowOf(db.knex),
      groups.map((g) => ({...g, consumed: 0})),
      {
        dryRun: false,
        lockTimeoutMs: 5000,
        statementTimeoutMs: 30_000,
        airlockVersion: 'test',
      },
    )
    const fixes: GroupFix[] = []
    await prepared.run({shouldStop: () => false, onItem: (fix) => fixes.push(fix)})
    return fixes
  }

  it.runIf(!perEvent)(
    'a pending duplicate (not consumed yet) is removed with every consumer DAG row held',
    async () => {
      const {pairs} = await world()
      const result = await fixCli()
      expect(result).toMatchObject({removed: 1, refused_pending: 0, skipped_busy: 0})
      expect(await db.knex('asset_event').where({id: pairs[0]!.extra})).toEqual([])
      expect(await db.knex('asset_event').where({id: pairs[0]!.kept})).toHaveLength(1)
      // The scheduler's next step takes the kept event only.
      const runs = await createAssetTriggeredRuns(db.knex, await schemaOf(db.knex), undefined, {perEventIds})
      expect(runs.map((run) => run.eventIds)).toEqual([[pairs[0]!.kept]])
    },
  )

  it.runIf(perEvent)(
    'a pending duplicate a queue row names is left (refused_pending, queued) with its queue rows; the next run takes it',
    async () => {
      const {pairs} = await world()
      const result = await fixCli()
      expect(result).toMatchObject({removed: 0, refused_pending: 1, skipped_busy: 0})
      expect(result.groups[0]).toMatchObject({
        outcome: 'kept',
        refused_pending: [pairs[0]!.extra],
        pending_reason: 'queued',
      })
      expect(await db.knex('asset_event').where({id: pairs[0]!.extra})).toHaveLength(1)
      expect(await db.knex('asset_dag_run_queue').where({asset_event_id: pairs[0]!.extra})).toHaveLength(1)
      const runs = await createAssetTriggeredRuns(db.knex, await schemaOf(db.knex), undefined, {perEventIds})
      expect(runs.map((run) => run.eventIds)).toEqual([[pairs[0]!.kept, pairs[0]!.extra]])
    },
  )

  it.each(['for no key update', 'for update'])(
    'a consumer DAG row the scheduler holds (%s, its mode) leaves the group skipped_busy, not waited on, nothing removed',
    async (mode) => {
      const {pairs} = await world()
      const scheduler = await db.knex.transaction()
      try {
        // dags_needing_dagruns: with_row_locks(…, skip_locked=True) renders FOR NO KEY UPDATE.
        await scheduler.raw(`select dag_id from dag where dag_id = 'report' ${mode}`)
        const result = await fixCli()
        expect(result).toMatchObject({removed: 0, skipped_busy: 1})
      } finally {
        await scheduler.rollback()
      }
      expect(await db.knex('asset_event').where({id: pairs[0]!.extra})).toHaveLength(1)
    },
  )

  it('two fixers from reads made at different times never remove the last event of a try', async () => {
    const {pairs} = await world()
    const {kept, extra, assetId} = pairs[0]!
    // A third copy; fixer A read {kept, extra, third}; fixer B read earlier, before `kept`'s group
    // formed as A saw it, and keeps `extra`, removing `third`.
    const [original] = await db.knex('asset_event').where({id: kept})
    const [third] = await db
      .knex('asset_event')
      .insert({...original, id: undefined})
      .returning('id')
    const [a, b] = await Promise.all([
      fixGroups([{kept, extras: [extra, third.id]}]),
      fixGroups([{kept: extra, extras: [third.id]}]),
    ])
    // Whichever ran first, the other found its events held or its kept event gone: one event stays.
    const left = await db.knex('asset_event').where({asset_id: assetId}).pluck('id')
    expect(left.length).toBeGreaterThanOrEqual(1)
    expect([...a, ...b].map((fix) => fix.outcome).sort()).toEqual(expect.arrayContaining(['removed']))
    // Run in sequence from the same stale reads: the second changes nothing.
    const again = await world()
    const p = again.pairs[0]!
    const [copy] = await db.knex('asset_event').where({id: p.kept})
    const [third2] = await db
      .knex('asset_event')
      .insert({...copy, id: undefined})
      .returning('id')
    expect((await fixGroups([{kept: p.kept, extras: [p.extra, third2.id]}]))[0]).toMatchObject({outcome: 'removed'})
    expect((await fixGroups([{kept: p.extra, extras: [third2.id]}]))[0]).toMatchObject({
      outcome: 'changed',
      removed: [],
    })
    expect(await db.knex('asset_event').where({id: p.kept})).toHaveLength(1)
  })

  it("an extra complete's audit row names for its try is never the one removed, whatever the timestamps say", async () => {
    const {w, pairs} = await world()
    const {kept, extra} = pairs[0]!
    const ti = w.ti('etl')
    await db.knex('log').insert({
      dttm: new Date(),
      dag_id: 'etl',
      task_id: ti.task_id,
      run_id: ti.run_id,
      map_index: -1,
      try_number: 1,
      event: 'success',
      owner: 'operator',
      extra: JSON.stringify({host_name: 'ops', airlock: {command: 'complete', event_ids: [extra]}}),
    })
    const [fix] = await fixGroups([{kept, extras: [extra]}])
    expect(fix).toMatchObject({outcome: 'kept', removed: [], refused_named: [extra]})
    expect(await db.knex('asset_event').where({id: extra})).toHaveLength(1)
  })

  it('beside the scheduler step in a loop: no scheduler error, no run that took a removed event, every pending duplicate gone or taken', async () => {
    const {pairs} = await world(12)
    const schema = await schemaOf(db.knex)
    let fixing = true
    const schedulerErrors: unknown[] = []
    const taken: number[] = []
    const scheduler = (async () => {
      while (fixing) {
        try {
          for (const run of await createAssetTriggeredRuns(db.knex, schema, undefined, {perEventIds}))
            taken.push(...run.eventIds)
        } catch (error) {
          schedulerErrors.push(error)
        }
        // More work for the next loop: report is queued again on a kept event's asset.
        const pair = pairs[taken.length % pairs.length]!
        await db
          .knex('asset_dag_run_queue')
          .insert({
            asset_id: pair.assetId,
            target_dag_id: 'report',
            created_at: new Date(),
            ...(perEvent ? {asset_event_id: pair.kept} : {}),
          })
          .onConflict()
          .ignore()
      }
    })()
    const results = []
    for (let round = 0; round < 6; round++) {
      const result = await fixCli()
      results.push(result)
      if (result.skipped_busy === 0 && result.changed === 0) break
    }
    fixing = false
    await scheduler
    // 3.4: what the fix left for the scheduler, its next step takes.
    if (perEvent)
      for (const run of await createAssetTriggeredRuns(db.knex, schema, undefined, {perEventIds}))
        taken.push(...run.eventIds)
    expect(schedulerErrors).toEqual([])
    const removed = results.flatMap((result) => result.groups.flatMap((group) => group.removed))
    expect(removed.filter((id) => taken.includes(id))).toEqual([])
    // 3.4: every extra was queued for report when it was registered: none is removed, each is left
    // for the scheduler (refused_pending) or was taken by it already.
    if (perEvent) expect(removed).toEqual([])
    // What is left of each pair: the kept event, and the extra only where a run took it.
    const extras = pairs.map((pair) => pair.extra)
    const stillThere = await db.knex('asset_event').whereIn('id', extras).pluck('id')
    const consumed = await db.knex('dagrun_asset_event').whereIn('event_id', extras).pluck('event_id')
    expect([...stillThere].sort()).toEqual([...new Set(consumed)].sort())
    expect(
      await db.knex('asset_event').whereIn(
        'id',
        pairs.map((pair) => pair.kept),
      ),
    ).toHaveLength(pairs.length)
  })
})
